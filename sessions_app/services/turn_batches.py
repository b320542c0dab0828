"""Recording many turns in one request, with set-based SQL.

A batch behaves as if its turns were posted one by one to `POST …/sessions/{id}/turns`
in order: the same validation, pricing, numbering, state chaining, budget flags, context
snapshot, idempotency and `turn_recorded` hooks, and each item gets the answer the
single route would have given it. What differs is the shape of the SQL:

1. Keys are claimed for the whole batch in one committed statement
   (`idempotency_claim_many`); replays and reused keys are answered from that read.
2. One transaction does the rest: one statement locks the batch's sessions in id order
   and reads their carts (`sessions_lock_for_turns`, as the single route; the order
   keeps concurrent batches from deadlocking), every item is decided by the single
   route's own `turn_draft` (writability, counts, reservation, rotation into a
   successor, capture, pricing, per-turn ceilings, budget flag; an item that fails is
   answered alone and writes nothing), then one COPY of
   the turns (their ids drawn from the sequence first), one of the steps, one UPDATE of
   all the sessions' counters (`sessions_save_counters`, as the single route) and one of
   the keys' stored responses.
3. After commit, `turn_recorded` is sent once per turn, in order.

With If-Match (`if_match`), the batch is conditional on the state of the one session its
items name, as a single turn is on its session's: the tag is checked once, under the
lock, against the state before the batch's first turn; a stale tag refuses the whole
batch (412, nothing written, every key released). Items answered from their keys alone
(replays) are not checked, as a replayed single turn is not; when nothing is left to
record, the tag is not checked at all.

A crash anywhere in step 2 leaves no turn of the batch (one transaction); its claims stay
in flight until `STALE_IN_FLIGHT`, exactly as for a crashed single turn.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from sessions_app.errors import ApplicationError, IdempotencyKeyReused, InvalidInput, NotFound
from sessions_app.fastpaths import rows_copy, rows_next_ids, sessions_save_counters
from sessions_app.models import ChatSession, ChatTurn, Tenant, TurnStep
from sessions_app.selectors.session_state import state_precondition_check
from sessions_app.selectors.sessions import session_is_expired
from sessions_app.services.idempotency import (
    KeyClaim,
    KeyedRequest,
    idempotency_claim_many,
    idempotency_complete_many,
    idempotency_release_many,
)
from sessions_app.services.session_locks import sessions_lock_for_turns
from sessions_app.services.spend_budgets import period_budgets_spend
from sessions_app.services.turn_drafts import TurnDraft, TurnFields, turn_announce, turn_draft
from sessions_app.services.turn_recording import Render, TurnRecorded, turn_idempotency_scope
from sessions_app.services.turn_totals import WindowFailures, spend_budget_warnings


@dataclass(frozen=True)
class BatchTurn:
    """One valid item: the session, what `turn_record` would be given, and its key with
    the route scope and body fingerprint the single route would have used."""

    session_id: uuid.UUID
    fields: TurnFields
    idempotency_key: str | None = None
    request_hash: str = ""

    @property
    def scope(self) -> str:
        """The single route's scope, so a key replays across both routes."""
        return turn_idempotency_scope(self.session_id)


@dataclass
class BatchOutcome:
    """The answer for one item: 201 with the rendered body, or an error."""

    status: int
    body: dict[str, Any] | None = None
    replayed: bool = False
    error: ApplicationError | None = None


@dataclass
class _Pending:
    """An item drafted for recording (see `turn_draft`), before any row is written."""

    index: int
    draft: TurnDraft
    recorded: TurnRecorded
    record_id: int | None = None
    later_of_session: bool = False


def _failed(error: ApplicationError) -> BatchOutcome:
    return BatchOutcome(status=error.status, error=error)


def _settle_keys(
    *, tenant: Tenant, items: list[BatchTurn | None]
) -> tuple[dict[int, BatchOutcome], dict[int, int], dict[int, int]]:
    """Claim the batch's keys. Returns the outcomes already known (replays, reused or
    in-flight keys), the record id of each claimed item, and for each repeat of a key
    inside the batch, the index of its first use (a repeat with the same body answers
    as a replay of the first; with another body, 422)."""
    known: dict[int, BatchOutcome] = {}
    first_use: dict[str, int] = {}
    repeats: dict[int, int] = {}
    for index, item in enumerate(items):
        if item is None or item.idempotency_key is None:
            continue
        first = first_use.setdefault(item.idempotency_key, index)
        if first != index:
            leader = items[first]
            assert leader is not None
            if (leader.scope, leader.request_hash) == (item.scope, item.request_hash):
                repeats[index] = first
            else:
                known[index] = _failed(
                    IdempotencyKeyReused(fields={"idempotency_key": ["Used with another body."]})
                )
    requests = []
    for key, index in first_use.items():
        item = items[index]
        assert item is not None
        requests.append(KeyedRequest(key=key, scope=item.scope, request_hash=item.request_hash))
    claims: dict[str, KeyClaim] = idempotency_claim_many(tenant=tenant, requests=requests)
    claimed: dict[int, int] = {}
    for key, index in first_use.items():
        claim = claims[key]
        if claim.record_id is not None:
            claimed[index] = claim.record_id
        elif claim.replay is not None:
            known[index] = BatchOutcome(
                status=claim.replay.status, body=claim.replay.body, replayed=True
            )
        else:
            assert claim.error is not None
            known[index] = _failed(claim.error)
    return known, claimed, repeats


def batch_session_id(items: list[BatchTurn | None]) -> uuid.UUID | None:
    """The session every valid item names, or None when they name none or several."""
    named = {item.session_id for item in items if item is not None}
    return named.pop() if len(named) == 1 else None


def _batch_if_match_check(items: list[BatchTurn | None], if_match: list[str] | None) -> None:
    """If-Match is the state's tag of one session: a batch that names several is a 400
    naming the header, before any key is claimed."""
    named = {item.session_id for item in items if item is not None}
    if if_match is not None and len(named) > 1:
        raise InvalidInput(
            "If-Match applies to one session's state; this batch names several sessions.",
            fields={"If-Match": ["Only for a batch whose turns all name one session_id."]},
        )


def turns_record_batch(
    *,
    tenant: Tenant,
    items: list[BatchTurn | None],
    render: Render,
    if_match: list[str] | None = None,
    now: datetime | None = None,
) -> list[BatchOutcome | None]:
    """Record the valid items (None marks an item the caller already refused) and answer
    each one; `render(recorded, keyed)` makes an item's 201 body (JSON-ready when keyed,
    since it is stored for replays). Returns one outcome per item, None where the item
    was None. `if_match` (the parsed If-Match): see the module's docstring; a stale tag
    raises PreconditionFailed and nothing of the batch is written."""
    now = now or timezone.now()
    _batch_if_match_check(items, if_match)
    known, claimed, repeats = _settle_keys(tenant=tenant, items=items)
    todo = [
        (index, item)
        for index, item in enumerate(items)
        if item is not None and index not in known and index not in repeats
    ]
    try:
        recorded = _record(
            tenant=tenant, todo=todo, claimed=claimed, render=render, if_match=if_match, now=now
        )
    except BaseException:
        idempotency_release_many(record_ids=list(claimed.values()))
        raise
    # Items refused before any write (unknown session, bad counts) free their keys, as a
    # failed single turn does, so that a corrected retry can use them.
    idempotency_release_many(
        record_ids=[pk for index, pk in claimed.items() if recorded.get(index, _NONE).status != 201]
    )
    known |= recorded
    outcomes: list[BatchOutcome | None] = []
    for index, item in enumerate(items):
        if item is None:
            outcomes.append(None)
        elif index in repeats:
            first = known[repeats[index]]
            outcomes.append(
                BatchOutcome(status=first.status, body=first.body, replayed=True)
                if first.status == 201
                else BatchOutcome(status=first.status, error=first.error)
            )
        else:
            outcomes.append(known[index])
    return outcomes


_NONE = BatchOutcome(status=0)


@transaction.atomic
def _record(
    *,
    tenant: Tenant,
    todo: list[tuple[int, BatchTurn]],
    claimed: dict[int, int],
    render: Render,
    if_match: list[str] | None,
    now: datetime,
) -> dict[int, BatchOutcome]:
    if not todo:
        return {}
    outcomes, pending, touched = _drafts(
        tenant=tenant, todo=todo, claimed=claimed, if_match=if_match, now=now
    )
    if not pending:
        return outcomes
    _insert(tenant=tenant, pending=pending, touched=touched, now=now)
    responses: dict[int, tuple[int, dict[str, Any]]] = {}
    for entry in pending:
        body = render(entry.recorded, entry.record_id is not None)
        outcomes[entry.index] = BatchOutcome(status=201, body=body)
        if entry.record_id is not None:
            responses[entry.record_id] = (201, body)
    idempotency_complete_many(responses=responses)
    transaction.on_commit(lambda: _announce(pending))
    return outcomes


@dataclass
class _BatchSessions:
    """The batch's sessions under lock, keyed by the id each records into now: after a
    rotation, an item naming the archived session is refused (410, as the single route
    answers) while the successor is known only by its own id. `touched` holds the
    sessions whose counters moved; `failures` the runaway window's failures the items
    drafted so far add to what is stored, so each item's warning counts the earlier
    items' as the single route would have (the stored ones read once, not per item)."""

    sessions: dict[uuid.UUID, ChatSession]
    carts: dict[uuid.UUID, list[dict[str, Any]]]
    # A successor opened by rotation is not in `held`: it releases as a plain turn does.
    held: dict[uuid.UUID, bool]
    touched: dict[uuid.UUID, ChatSession] = field(default_factory=dict)
    failures: WindowFailures = field(default_factory=WindowFailures)


def _batch_sessions_lock(*, tenant: Tenant, todo: list[tuple[int, BatchTurn]]) -> _BatchSessions:
    """Lock the items' sessions in id order (one statement) and read their carts."""
    locked = sessions_lock_for_turns(
        tenant=tenant, ids=sorted({item.session_id for _, item in todo})
    )
    return _BatchSessions(
        sessions={pk: entry.session for pk, entry in locked.items()},
        carts={pk: entry.cart for pk, entry in locked.items()},
        held={pk: entry.reservations_held for pk, entry in locked.items()},
    )


def _drafts(
    *,
    tenant: Tenant,
    todo: list[tuple[int, BatchTurn]],
    claimed: dict[int, int],
    if_match: list[str] | None,
    now: datetime,
) -> tuple[dict[int, BatchOutcome], list[_Pending], dict[uuid.UUID, ChatSession]]:
    """Lock the items' sessions, check If-Match against the state they hold before the
    batch, and draft each item's turn in order: the refusals by index, the turns to
    insert, and the sessions whose counters moved."""
    outcomes: dict[int, BatchOutcome] = {}
    batch = _batch_sessions_lock(tenant=tenant, todo=todo)
    if if_match is not None:
        for session in batch.sessions.values():  # one: see `_batch_if_match_check`
            # A closed session answers each item 410 first, as the single route does.
            if not session_is_expired(session, now=now):
                state_precondition_check(state=session.state, if_match=if_match)
    pending: list[_Pending] = []
    for index, item in todo:
        draft = _draft_item(tenant=tenant, batch=batch, item=item, now=now)
        if isinstance(draft, BatchOutcome):
            outcomes[index] = draft
            continue
        # The recorded session is a copy: later turns of the batch move the live one on.
        recorded = TurnRecorded(
            turn=draft.turn, session=copy.copy(draft.session), warnings=draft.warnings
        )
        pending.append(_Pending(index, draft, recorded, record_id=claimed.get(index)))
    _mark_later_of_session(pending)
    return outcomes, pending, batch.touched


def _draft_item(
    *, tenant: Tenant, batch: _BatchSessions, item: BatchTurn, now: datetime
) -> TurnDraft | BatchOutcome:
    """One item's turn drafted into the session its id records into now, which moves on
    in `batch` (a successor after rotation takes over its cart); or the item's refusal,
    decided before any write of this item."""
    session = batch.sessions.get(item.session_id)
    if session is None:
        return _failed(NotFound("Session not found."))
    try:
        draft = turn_draft(
            tenant=tenant,
            session=session,
            cart=batch.carts[item.session_id],
            fields=item.fields,
            idempotency_key=item.idempotency_key,
            now=now,
            reservations_held=batch.held.get(item.session_id, True),
            failures=batch.failures,
        )
    except ApplicationError as exc:
        return _failed(exc)
    if draft.session is not session:  # rotated: the old one is archived (and saved)
        batch.touched[session.pk] = session
        batch.sessions[draft.session.pk] = draft.session
        batch.carts[draft.session.pk] = batch.carts[item.session_id]
    batch.touched[draft.session.pk] = draft.session
    return draft


def _mark_later_of_session(pending: list[_Pending]) -> None:
    """Flag every drafted turn that another turn of its session follows in the batch."""
    last_index = {entry.draft.session.pk: position for position, entry in enumerate(pending)}
    for position, entry in enumerate(pending):
        entry.later_of_session = last_index[entry.draft.turn.session_id] != position


def _insert(
    *,
    tenant: Tenant,
    pending: list[_Pending],
    touched: dict[uuid.UUID, ChatSession],
    now: datetime,
) -> None:
    """Write the drafted turns (ids drawn first, then COPY), their steps, the sessions'
    counters and the period budgets' spend."""
    turns = [entry.draft.turn for entry in pending]
    for turn, pk in zip(turns, rows_next_ids(ChatTurn, len(turns)), strict=True):
        turn.pk = pk
    steps = []
    for entry in pending:
        for step in entry.draft.steps:
            step.turn_id = entry.draft.turn.pk
            steps.append(step)
    rows_copy(ChatTurn, turns, now=now)
    rows_copy(TurnStep, steps, now=now, with_pk=False)
    sessions_save_counters(list(touched.values()))
    passed = period_budgets_spend(tenant_id=tenant.pk, steps=steps, at=now)
    for entry in pending if passed else ():
        spending = [s for s in entry.draft.steps if s.input_tokens or s.output_tokens or s.cost_usd]
        concerned = [b for b in passed if any(b.covers(step) for step in spending)]
        entry.draft.warnings.extend(spend_budget_warnings(concerned))


def _announce(pending: list[_Pending]) -> None:
    """`turn_recorded` once per turn, in order, after commit; every turn of a session
    but its last in the batch says that more follow."""
    for entry in pending:
        turn_announce(
            turn=entry.draft.turn,
            session=entry.recorded.session,
            session_turns_follow=entry.later_of_session,
        )
