"""Deciding one turn and writing what was decided, shared by every way turns are
recorded (the single route's `turn_record`, the batch route, the conversation import), so
they cannot drift.

`TurnFields` is what a client sends for one turn. `turn_draft` decides the turn under its
session's lock, taken by the caller (`session_locks`): checks, the budget reservation it
spends, rotation, numbering from `last_turn_number` (race-free under the lock), state
chaining, the workspace snapshot, pricing and warnings; the session's totals are moved
on the locked instance, for the caller to write back with one fixed UPDATE
(`sessions_save_counters`). `turns_insert` writes drafted turns with their steps, and
`turn_announce` sends `turn_recorded` for a committed one.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from sessions_app.errors import InvalidInput
from sessions_app.fastpaths import instance_new, rows_copy, rows_insert, turn_steps_preloaded
from sessions_app.hooks import turn_recorded
from sessions_app.models import ChatSession, ChatTurn, SessionStatus, Tenant, TurnKind, TurnStep
from sessions_app.selectors.budgets import budget_remaining
from sessions_app.selectors.session_state import state_precondition_check
from sessions_app.selectors.sessions import NEWEST_STEP_MODEL, session_ensure_writable
from sessions_app.services.budgets import budget_reservation_release
from sessions_app.services.capture import capture_enabled
from sessions_app.services.lifecycle import session_touch
from sessions_app.services.rotation import rotation_due, session_rotate
from sessions_app.services.snapshots import session_workspace_snapshot
from sessions_app.services.turn_totals import (
    StepInput,
    TurnWarning,
    WindowFailures,
    reservation_unknown_warning,
    steps_validate,
    turn_increments,
    turn_limits_passed,
    turn_price_steps,
    turn_set_totals,
    turn_warnings,
)

UNCHANGED: Any = object()


def session_apply_turn(
    *, session: ChatSession, turn: ChatTurn, state: dict[str, Any], now: datetime
) -> None:
    """Move the locked session's instance on by one turn: counters, activity and expiry,
    state (unless UNCHANGED), opened -> active, and the budget flag when this turn spends
    the budget. `sessions_save_counters` writes it."""
    for name, value in turn_increments(turn).items():
        setattr(session, name, getattr(session, name) + value)
    session_touch(session=session, now=now)
    session.updated_at = now
    if state is not UNCHANGED:
        session.state = state
    if session.status == SessionStatus.OPENED:
        session.status = SessionStatus.ACTIVE
    if session.budget_exceeded_at is None and budget_remaining(session).exceeded:
        session.budget_exceeded_at = now


@dataclass(frozen=True)
class TurnFields:
    """What a client sends for one turn besides its session and key (both routes)."""

    steps: list[StepInput]
    user_message: str = ""
    assistant_response: str = ""
    intent_data: dict[str, Any] | None = None
    reasoning: str = ""
    metadata: dict[str, Any] | None = None
    state: dict[str, Any] = UNCHANGED
    duration_ms: int | None = None
    reservation_id: uuid.UUID | None = None
    kind: str = TurnKind.EXCHANGE
    changed_by: str = ""
    occurred_at: datetime | None = None
    if_match: list[str] | None = None  # the If-Match tags, checked against the state


def occurred_at_check(value: datetime | None, *, now: datetime) -> datetime:
    """When a turn happened: `value` (imported history keeps its own time) or `now`.
    InvalidInput naming `occurred_at` for a naive time or one later than now by more
    than ENGRAM_TURN_CLOCK_SKEW_SECONDS (a client's clock may run a little ahead;
    history cannot come from the future). Any earlier time is kept, as a memory's
    `occurred_at` is: the API's own range (years 1-9999 in UTC) is the only floor."""
    if value is None:
        return now
    problem = None
    if value.tzinfo is None:
        problem = "A time zone is required (e.g. 2024-05-08T13:56:00Z)."
    elif value > now + timedelta(seconds=settings.ENGRAM_TURN_CLOCK_SKEW_SECONDS):
        problem = "In the future (beyond the allowed clock skew)."
    if problem:
        raise InvalidInput("The turn's time is not acceptable.", fields={"occurred_at": [problem]})
    return value


@dataclass
class TurnDraft:
    """One turn decided under its session's lock, not yet inserted: the turn with its
    totals and flag, its priced steps, and the session (a successor after rotation)
    moved on in memory."""

    turn: ChatTurn
    steps: list[TurnStep]
    session: ChatSession
    warnings: list[TurnWarning]


def _turn_priced_steps(
    *, tenant: Tenant, session: ChatSession, turn: ChatTurn, fields: TurnFields, now: datetime
) -> list[TurnStep]:
    """The turn's steps priced, and the turn's totals and ceilings set from them, before
    the turn is inserted, so that it is written once, with its totals. The session
    remembers the newest step's model (`session_model`), and the turn serves its steps
    from memory when the response lists them, not from another query."""
    capture = any(s.prompt is not None or s.completion for s in fields.steps) and (
        capture_enabled(session=session, tenant=tenant)
    )
    step_rows = turn_price_steps(
        turn=turn, session=session, steps=fields.steps, at=now, capture=capture
    )
    turn_set_totals(turn=turn, step_rows=step_rows, duration_ms=fields.duration_ms)
    turn.over_limit = turn_limits_passed(turn)
    newest_model = next((row.model for row in reversed(step_rows) if row.model), "")
    if newest_model:
        setattr(session, NEWEST_STEP_MODEL, newest_model)
    turn_steps_preloaded(turn, step_rows)
    return step_rows


def turn_draft(
    *,
    tenant: Tenant,
    session: ChatSession,
    cart: list[dict[str, Any]],
    fields: TurnFields,
    idempotency_key: str | None,
    now: datetime,
    reservations_held: bool = True,
    failures: WindowFailures | None = None,
) -> TurnDraft:
    """Everything either route decides for one turn, in one place, so the single and the
    batch route cannot drift: writability (410), counts (400), the state's If-Match
    (412, when `fields.if_match` is given), the budget reservation it spends, rotation
    (a successor opens when the session passed its token threshold), numbering, state
    chaining, the workspace snapshot, prompt capture, pricing, totals, the per-turn
    ceilings (`over_limit`), the session's counters and budget flag, and the warnings.
    `session` is locked by the caller (`sessions_lock_for_turns`), inside its
    transaction; the session's counters are moved on the instance (written later by
    `sessions_save_counters`). `reservations_held` False (the lock read found no budget
    reservation of the session) skips releasing one: there is none to spend or clear.
    `failures` (turns drafted together, as a batch's) counts the failures of the turns
    drafted before this one for its runaway warning, and takes this one's.
    Raises before writing anything, so a batch can refuse the item alone; the only
    writes (reservation, rotation) come after every check."""
    occurred_at = _turn_checks(session=session, fields=fields, now=now)
    session, rotated_from, reservation_unknown = _turn_session(
        session=session, fields=fields, now=now, reservations_held=reservations_held
    )
    was_exceeded = budget_remaining(session).exceeded

    turn = _turn_row(
        session=session,
        cart=cart,
        fields=fields,
        idempotency_key=idempotency_key,
        occurred_at=occurred_at,
    )
    step_rows = _turn_priced_steps(
        tenant=tenant, session=session, turn=turn, fields=fields, now=now
    )
    session_apply_turn(session=session, turn=turn, state=fields.state, now=now)

    warnings = turn_warnings(
        turn=turn,
        step_rows=step_rows,
        session=session,
        rotated_from=rotated_from,
        was_exceeded=was_exceeded,
        now=now,
        failures=failures,
    )
    if failures is not None:
        failures.add(session_id=session.pk, step_rows=step_rows)
    if reservation_unknown:
        warnings.append(reservation_unknown_warning(fields.reservation_id))
    return TurnDraft(turn=turn, steps=step_rows, session=session, warnings=warnings)


def _turn_checks(*, session: ChatSession, fields: TurnFields, now: datetime) -> datetime:
    """The session is writable (410), the steps and time are valid (400), and, with
    `if_match`, its state still has one of those tags (412; `session` is the locked row);
    answers the turn's time."""
    session_ensure_writable(session=session, now=now)
    steps_validate(fields.steps)
    occurred_at = occurred_at_check(fields.occurred_at, now=now)
    if fields.if_match is not None:
        state_precondition_check(state=session.state, if_match=fields.if_match)
    return occurred_at


def _turn_session(
    *, session: ChatSession, fields: TurnFields, now: datetime, reservations_held: bool
) -> tuple[ChatSession, ChatSession | None, bool]:
    """The session the turn records into, after the writes that come before the turn:
    the budget reservation it spends is released (when the session holds any), and a
    session due for rotation gives way to its successor. Returns that session, the one
    it replaced (None without a rotation), and whether `reservation_id` named no
    reservation of the session (the turn is recorded all the same: it was spent)."""
    named = fields.reservation_id
    found = reservations_held and budget_reservation_release(
        session=session, reservation_id=named, now=now
    )
    unknown = named is not None and not found
    if fields.kind == TurnKind.EXCHANGE and rotation_due(session):
        return session_rotate(session=session, now=now), session, unknown
    return session, None, unknown


def _turn_row(
    *,
    session: ChatSession,
    cart: list[dict[str, Any]],
    fields: TurnFields,
    idempotency_key: str | None,
    occurred_at: datetime,
) -> ChatTurn:
    """The unsaved turn: numbered after the locked session's last turn, its state chained
    from the session's, and the workspace as it stands after it."""
    state = fields.state
    return instance_new(
        ChatTurn,
        tenant_id=session.tenant_id,
        session=session,
        turn_number=session.last_turn_number + 1,  # safe: the row is locked
        kind=fields.kind,
        changed_by=fields.changed_by,
        user_message=fields.user_message,
        assistant_response=fields.assistant_response,
        intent_data=fields.intent_data or {},
        reasoning=fields.reasoning,
        metadata=fields.metadata or {},
        state_before=session.state,
        state_after=session.state if state is UNCHANGED else state,
        context_after=session_workspace_snapshot(session=session, cart=cart),
        idempotency_key=idempotency_key,
        occurred_at=occurred_at,
    )


def turns_insert(drafts: list[TurnDraft], *, now: datetime) -> None:
    """Insert a few drafted turns and their steps: the turns by one fixed INSERT (their
    ids come back), the steps by COPY (nothing to return, and no INSERT whose 60-odd
    parameters psycopg would re-parse on every call)."""
    rows_insert(ChatTurn, [draft.turn for draft in drafts], now=now)
    steps = []
    for draft in drafts:
        for step in draft.steps:
            step.turn_id = draft.turn.pk
            steps.append(step)
    rows_copy(TurnStep, steps, now=now, with_pk=False)


def turn_announce(
    *, turn: ChatTurn, session: ChatSession, session_turns_follow: bool = False
) -> None:
    """`turn_recorded` for a committed turn. `session_turns_follow` tells receivers that
    judge the session as a whole (compaction, runaway) that a later turn of the same
    session follows in the same batch, so they may wait for that one."""
    turn_recorded.send(
        sender=ChatTurn,
        turn_id=turn.pk,
        session_id=session.pk,
        tenant_id=session.tenant_id,
        turn=turn,
        session=session,
        session_turns_follow=session_turns_follow,
    )
