"""`POST /api/v1/conversations/import`: request and response shapes."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from sessions_app.api.fields import OffsetDateTimeField, identifier_field
from sessions_app.api.serializers_turn_batches import ItemErrorSerializer
from sessions_app.api.serializers_turns import MAX_TEXT
from sessions_app.services.conversation_import import (
    CONVERSATIONAL_ROLES,
    SKIPPED_ROLES,
    ConversationDraft,
    ImportedMessage,
)

MAX_MESSAGES = 2000
MAX_CONVERSATIONS = 100


class ImportedMessageSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    role = serializers.ChoiceField(
        choices=sorted(CONVERSATIONAL_ROLES | SKIPPED_ROLES),
        help_text="OpenAI chat roles; only `user` and `assistant` messages become turns.",
    )
    content = serializers.CharField(
        allow_blank=True,
        allow_null=True,
        max_length=MAX_TEXT,
        trim_whitespace=False,
        help_text="The message text (null or blank: skipped, e.g. a tool call).",
    )
    timestamp = OffsetDateTimeField(
        required=False,
        allow_null=True,
        help_text="When it was said. Missing: the time of the message before it, else the "
        "conversation's `started_at`, else now. Refused later than now plus "
        "ENGRAM_TURN_CLOCK_SKEW_SECONDS (300), as a turn's `occurred_at`.",
    )


class ConversationImportItemSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    conversation_id = identifier_field(
        help_text="Your id of the conversation; importing it again for the same user "
        "answers the session it made and writes nothing. Stored as the session's "
        "`external_session_id`."
    )
    user_id = identifier_field(help_text="The end user whose conversation it was.")
    agent_id = identifier_field(
        required=False, default="imported", help_text="The agent that took part."
    )
    started_at = OffsetDateTimeField(
        required=False,
        allow_null=True,
        help_text="The time of messages that carry none; refused later than now plus "
        "ENGRAM_TURN_CLOCK_SKEW_SECONDS (300).",
    )
    metadata = serializers.DictField(
        required=False, default=dict, help_text="Kept on the session, with `imported: true`."
    )
    messages = ImportedMessageSerializer(  # type: ignore[call-arg]  # many=True: a ListSerializer
        many=True,
        min_length=1,
        max_length=MAX_MESSAGES,
        help_text=f"The messages in order, at most {MAX_MESSAGES}.",
    )

    @staticmethod
    def draft(validated: dict[str, Any]) -> ConversationDraft:
        return ConversationDraft(
            conversation_id=validated["conversation_id"],
            user_id=validated["user_id"],
            agent_id=validated["agent_id"],
            started_at=validated.get("started_at"),
            metadata=validated.get("metadata") or {},
            messages=[
                ImportedMessage(
                    role=m["role"], content=m.get("content") or "", timestamp=m.get("timestamp")
                )
                for m in validated["messages"]
            ],
        )


class ConversationImportSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    conversations = ConversationImportItemSerializer(  # type: ignore[call-arg]  # many=True makes a ListSerializer; the stubs do not know it
        many=True,
        min_length=1,
        max_length=MAX_CONVERSATIONS,
        help_text=f"At most {MAX_CONVERSATIONS} conversations; each is validated and stored "
        "on its own (whole or not at all): a bad one is answered in its result.",
    )


class ConversationImportResultSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    index = serializers.IntegerField(help_text="The conversation's position in the request.")
    status = serializers.IntegerField(
        help_text="201 imported, 200 already imported (nothing written), 400 refused."
    )
    conversation_id = serializers.CharField(allow_null=True, help_text="As sent.")
    session_id = serializers.UUIDField(allow_null=True, help_text="The archived session.")
    turns = serializers.IntegerField(help_text="Turns the session holds.")
    error = ItemErrorSerializer(allow_null=True, help_text="Why it was refused; else null.")


class ConversationImportResponseSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    results = ConversationImportResultSerializer(many=True, help_text="One per conversation.")
