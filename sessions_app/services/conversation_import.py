"""Importing past conversations: a chat history (OpenAI chat format, with timestamps)
becomes an archived session of its user whose turns keep their real time, so that the
user's memory covers what was said before Engram was in the loop.

One conversation is one transaction: it is stored whole or not at all. It is idempotent
per conversation: the session carries the conversation's id as its
`external_session_id`, and importing an id the user already has answers that session and
writes nothing. Each pair of a user message and the assistant's reply is a turn, recorded
by the turn log's own `turn_draft` (numbering, totals, snapshot), with no steps: an
imported history spent nothing through Engram. System and tool messages carry no
conversation and are skipped. After commit the turns are announced (`turn_recorded`) as a
batch's are, so the user's memories follow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from sessions_app.errors import InvalidInput
from sessions_app.fastpaths import sessions_save_counters
from sessions_app.hooks import announce_sessions_ended
from sessions_app.locks import advisory_xact_lock
from sessions_app.models import ChatSession, SessionStatus, Tenant
from sessions_app.services.session_locks import sessions_lock_for_turns
from sessions_app.services.sessions import session_create
from sessions_app.services.turn_drafts import (
    TurnFields,
    occurred_at_check,
    turn_announce,
    turn_draft,
    turns_insert,
)

CONVERSATIONAL_ROLES = frozenset({"user", "assistant"})
SKIPPED_ROLES = frozenset({"system", "developer", "tool", "function"})


@dataclass(frozen=True)
class ImportedMessage:
    role: str
    content: str
    timestamp: datetime | None = None


@dataclass
class ConversationDraft:
    conversation_id: str
    user_id: str
    agent_id: str
    messages: Sequence[ImportedMessage]
    started_at: datetime | None = None  # the time of messages that carry none
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ConversationImported:
    session: ChatSession
    turns: int
    created: bool  # False: the user already had this conversation; nothing written


def _times(draft: ConversationDraft, now: datetime) -> list[datetime]:
    """Each message's time: its own, else the last one before it, else the
    conversation's start, else now. InvalidInput names the message at fault."""
    times: list[datetime] = []
    last = draft.started_at
    if last is not None:
        try:
            occurred_at_check(last, now=now)
        except InvalidInput as exc:
            raise InvalidInput(fields={"started_at": exc.fields["occurred_at"]}) from exc
    for index, message in enumerate(draft.messages):
        if message.timestamp is not None:
            try:
                last = occurred_at_check(message.timestamp, now=now)
            except InvalidInput as exc:
                problem = exc.fields["occurred_at"]
                raise InvalidInput(fields={f"messages.{index}.timestamp": problem}) from exc
        times.append(last or now)
    return times


def conversation_turns(draft: ConversationDraft, *, now: datetime) -> list[TurnFields]:
    """The turns of a conversation: a user message with the assistant's reply after it
    (either may stand alone), at the time of its first message."""
    times = _times(draft, now)
    turns: list[TurnFields] = []
    pending: tuple[str, datetime] | None = None
    for message, at in zip(draft.messages, times, strict=True):
        if message.role not in CONVERSATIONAL_ROLES or not message.content.strip():
            continue
        if message.role == "user":
            if pending is not None:
                turns.append(TurnFields(steps=[], user_message=pending[0], occurred_at=pending[1]))
            pending = (message.content, at)
            continue
        user, start = pending if pending is not None else ("", at)
        turns.append(
            TurnFields(
                steps=[], user_message=user, assistant_response=message.content, occurred_at=start
            )
        )
        pending = None
    if pending is not None:
        turns.append(TurnFields(steps=[], user_message=pending[0], occurred_at=pending[1]))
    return turns


@transaction.atomic
def conversation_import(
    *, tenant: Tenant, draft: ConversationDraft, now: datetime | None = None
) -> ConversationImported:
    """Store one past conversation as an archived session of its user (see the module
    docstring); InvalidInput before anything is written when a message is unusable."""
    now = now or timezone.now()
    fields = conversation_turns(draft, now=now)
    advisory_xact_lock(f"conversation_import:{tenant.pk}:{draft.user_id}:{draft.conversation_id}")
    existing = ChatSession.objects.filter(
        tenant=tenant, user_id=draft.user_id, external_session_id=draft.conversation_id
    ).first()
    if existing is not None:
        return ConversationImported(existing, existing.turn_count, created=False)
    created = session_create(
        tenant=tenant,
        user_id=draft.user_id,
        agent_id=draft.agent_id,
        metadata={**draft.metadata, "imported": True},
        external_session_id=draft.conversation_id,
    )
    locked = sessions_lock_for_turns(tenant=tenant, ids=[created.pk])[created.pk]
    session, drafts = locked.session, []
    for turn_fields in fields:
        drafts.append(
            turn_draft(
                tenant=tenant,
                session=session,
                cart=locked.cart,
                fields=turn_fields,
                idempotency_key=None,
                now=now,
            )
        )
    if drafts:
        turns_insert(drafts, now=now)
    session.status = SessionStatus.ARCHIVED
    sessions_save_counters([session])
    ChatSession.objects.filter(pk=session.pk).update(status=SessionStatus.ARCHIVED)

    def announce() -> None:
        for index, row in enumerate(drafts):
            turn_announce(
                turn=row.turn, session=session, session_turns_follow=index < len(drafts) - 1
            )

    transaction.on_commit(announce)
    announce_sessions_ended(tenant_id=tenant.pk, session_ids=[session.pk], reason="imported")
    return ConversationImported(session, len(drafts), created=True)
