"""Memory API serializers: validation at the edge, help_text for the OpenAPI schema."""

from __future__ import annotations

import json
from typing import Any, cast

from django.conf import settings
from rest_framework import serializers

from memory_app.models import Memory, MemoryScope, MemorySource, MemoryType, RelationType
from memory_app.services.memories import MemoryDraft
from memory_app.subjects import MAX_SUBJECT_CHARS
from sessions_app.api.fields import OffsetDateTimeField, identifier_field

MAX_CONTENT_CHARS = 8000
MAX_SUMMARY_CHARS = 2000
MAX_TAGS = 50
MAX_BULK_ITEMS = 500
MAX_QUERY_CHARS = 2000


class TextField(serializers.CharField):
    """A CharField that refuses numbers and booleans instead of stringifying them: a
    memory's text that arrived as 12 is a client bug worth reporting."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class MetadataField(serializers.DictField):
    """A free JSON object, capped at ENGRAM_MEMORY_METADATA_MAX_BYTES as compact JSON:
    metadata is for the caller's keys (a source URL, a ticket id), not for documents."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        value: dict[str, Any] = super().to_internal_value(data)
        limit = int(settings.ENGRAM_MEMORY_METADATA_MAX_BYTES)
        size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
        if size > limit:
            raise serializers.ValidationError(f"At most {limit} bytes of JSON; got {size}.")
        return value


def _metadata_field(**kwargs: Any) -> MetadataField:
    return MetadataField(
        help_text="Free key/values (a JSON object of at most ENGRAM_MEMORY_METADATA_MAX_BYTES "
        "bytes, 4096 by default); searchable by containment.",
        **kwargs,
    )


def _tags_field(**kwargs: Any) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.CharField(max_length=64, allow_blank=False),
        max_length=MAX_TAGS,
        **kwargs,
    )


# The longest role a memory stores (its column). Longer is refused at the edge: the
# response's schema promises no longer, and PostgreSQL does not check the length of an
# array's elements.
_ROLE_COLUMN = Memory._meta.get_field("allowed_roles").base_field  # type: ignore[attr-defined]  # an ArrayField
ROLE_MAX_LENGTH = cast(int, _ROLE_COLUMN.max_length)


def _identifiers_field(max_length: int = 255, **kwargs: Any) -> serializers.ListField:
    """A list of user ids or roles, each 1 to `max_length` characters."""
    child = serializers.CharField(max_length=max_length, allow_blank=False)
    return serializers.ListField(child=child, max_length=200, **kwargs)


def _unit_field(**kwargs: Any) -> serializers.FloatField:
    return serializers.FloatField(min_value=0.0, max_value=1.0, **kwargs)


def _valid_from_field(**kwargs: Any) -> serializers.DateTimeField:
    return OffsetDateTimeField(
        allow_null=True,
        help_text="When what the memory states began to hold; null: open. "
        "A search with `valid_at` finds the memories whose interval holds that instant.",
        **kwargs,
    )


def _valid_to_field(**kwargs: Any) -> serializers.DateTimeField:
    return OffsetDateTimeField(
        allow_null=True,
        help_text="When it stopped holding (exclusive); must be after valid_from "
        "(else 400 on `valid_to`); null: still holds. Set by the service on a memory that "
        "a newer one supersedes.",
        **kwargs,
    )


def _check_interval(start: Any, end: Any) -> None:
    if start is not None and end is not None and end <= start:
        raise serializers.ValidationError({"valid_to": ["Must be after valid_from."]})


class RelationInputSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    type = serializers.ChoiceField(choices=RelationType.choices, help_text="The edge's kind.")
    target_id = serializers.UUIDField(help_text="The related memory (same tenant).")


class MemoryCreateSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    user_id = identifier_field(help_text="The end user the memory is about.")
    agent_id = serializers.CharField(
        max_length=255,
        required=False,
        allow_blank=True,
        default="",
        help_text="The agent that learnt it; blank for every agent.",
    )
    type = serializers.ChoiceField(choices=MemoryType.choices, help_text="What kind of memory.")
    scope = serializers.ChoiceField(
        choices=MemoryScope.choices,
        default=MemoryScope.PRIVATE,
        help_text="private: its user only; shared: its user plus allowed_users and "
        "allowed_roles; public: the whole tenant.",
    )
    content = TextField(
        max_length=MAX_CONTENT_CHARS, help_text="The text to remember (raw, as stated)."
    )
    summary = TextField(
        max_length=MAX_SUMMARY_CHARS,
        required=False,
        allow_blank=True,
        default="",
        help_text="A short third-person summary.",
    )
    structured = serializers.DictField(
        required=False, default=dict, help_text="Structured form of the memory (JSON object)."
    )
    tags = _tags_field(required=False, default=list, help_text="Labels to filter on.")
    metadata = _metadata_field(required=False, default=dict)
    importance = _unit_field(
        required=False,
        default=0.5,
        help_text="0..1; slows decay. Below ENGRAM_MEMORY_MIN_IMPORTANCE (unless pinned) the "
        "memory is refused with 422 memory_rejected.",
    )
    confidence = _unit_field(
        required=False,
        default=1.0,
        help_text="0..1; how sure we are. Below ENGRAM_MEMORY_MIN_CONFIDENCE (unless pinned) "
        "the memory is refused with 422 memory_rejected.",
    )
    source = serializers.ChoiceField(  # type: ignore[assignment]  # DRF moves declared fields off the class
        choices=MemorySource.choices,
        default=MemorySource.EXPLICIT_USER_INPUT,
        help_text="Where the memory came from.",
    )
    session_id = serializers.UUIDField(
        required=False, allow_null=True, default=None, help_text="The session it was learnt in."
    )
    allowed_users = _identifiers_field(
        required=False, default=list, help_text="For scope 'shared': users who may read it."
    )
    allowed_roles = _identifiers_field(
        ROLE_MAX_LENGTH,
        required=False,
        default=list,
        help_text="For scope 'shared': roles that may read it.",
    )
    pinned = serializers.BooleanField(
        required=False, default=False, help_text="Pinned memories never decay away."
    )
    relations = RelationInputSerializer(
        many=True, required=False, default=list, help_text="Edges to existing memories."
    )
    thread_key = serializers.CharField(
        max_length=255,
        required=False,
        allow_blank=True,
        default="",
        help_text="The conversation (or any ordered stream) the memory came from. Memories "
        "of one user and thread are searched with their neighbours' words: a turn is found "
        "by the question before it or the answer after it. Blank with a session_id and a "
        "thread_order: the session is the thread.",
    )
    thread_order = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=0,
        max_value=2**53,
        help_text="Its place in the thread (0..2^53); omitted: after the thread's last memory.",
    )
    occurred_at = OffsetDateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text="When what it records happened (e.g. the conversation's date).",
    )
    valid_from = _valid_from_field(required=False, default=None)
    valid_to = _valid_to_field(required=False, default=None)
    subject = serializers.CharField(
        max_length=MAX_SUBJECT_CHARS,
        required=False,
        allow_blank=True,
        default="",
        help_text="The attribute of the user the memory states a value of ('home', "
        "'employer', 'seat preference'). A fact, preference or profile memory that gives "
        "a subject another value than a current memory of the same user supersedes it "
        "(the older gets `superseded_by` and `valid_to`). Blank: read from the content "
        "by rules ('I live in X', 'I moved to X', 'my address is X', 'I work at X', "
        "'my <words> is X', ...), none if no rule applies.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        _check_interval(attrs.get("valid_from"), attrs.get("valid_to"))
        return attrs

    def to_draft(self) -> MemoryDraft:
        return memory_draft_from(self.validated_data)


def memory_draft_from(validated: dict[str, Any]) -> MemoryDraft:
    """A validated MemoryCreateSerializer item as the add service's input."""
    data = dict(validated)
    relations = [(item["type"], item["target_id"]) for item in data.pop("relations", [])]
    return MemoryDraft(**data, relations=relations)


def memory_bulk_serializer(data: Any) -> serializers.ListSerializer:  # type: ignore[type-arg]  # generic in DRF's stubs only
    """1 to MAX_BULK_ITEMS memories, each validated like a single add."""
    return MemoryCreateSerializer(  # type: ignore[return-value,call-arg]  # many=True makes a ListSerializer
        data=data, many=True, min_length=1, max_length=MAX_BULK_ITEMS
    )


class MemoryUpdateSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    """Every field optional; any change makes a new version."""

    content = TextField(
        max_length=MAX_CONTENT_CHARS, required=False, help_text="New text (re-embedded)."
    )
    summary = TextField(
        max_length=MAX_SUMMARY_CHARS, required=False, allow_blank=True, help_text="New summary."
    )
    structured = serializers.DictField(required=False, help_text="Replaces the structured form.")
    tags = _tags_field(required=False, help_text="Replaces the tags.")
    metadata = _metadata_field(required=False)
    importance = _unit_field(required=False, help_text="0..1.")
    confidence = _unit_field(required=False, help_text="0..1.")
    scope = serializers.ChoiceField(
        choices=MemoryScope.choices, required=False, help_text="New visibility."
    )
    allowed_users = _identifiers_field(required=False, help_text="Replaces allowed_users.")
    allowed_roles = _identifiers_field(
        ROLE_MAX_LENGTH, required=False, help_text="Replaces allowed_roles."
    )
    pinned = serializers.BooleanField(required=False, help_text="Pin or unpin.")
    valid_from = _valid_from_field(required=False)
    valid_to = _valid_to_field(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError("Nothing to change.")
        _check_interval(attrs.get("valid_from"), attrs.get("valid_to"))
        return attrs


class ActorQuerySerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    """Who is acting, for GET/PATCH/DELETE (query parameters)."""

    acting_user_id = serializers.CharField(
        max_length=255,
        required=False,
        allow_blank=True,
        help_text="The end user on whose behalf the agent reads; without it only public "
        "memories (and shared ones granted to acting_roles) are visible.",
    )
    acting_roles = serializers.CharField(
        max_length=2000,
        required=False,
        allow_blank=True,
        help_text="Comma-separated roles of the acting user (e.g. 'admin,editor').",
    )

    def actor_parts(self) -> tuple[str | None, tuple[str, ...]]:
        data = self.validated_data
        roles = tuple(r.strip() for r in data.get("acting_roles", "").split(",") if r.strip())
        return data.get("acting_user_id") or None, roles
