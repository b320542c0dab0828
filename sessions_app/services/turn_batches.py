"""Recording many turns in one request, with set-based SQL.

A batch behaves as if its turns were posted one by one to `POST …/sessions/{id}/turns`
in order: the same validation, pricing, numbering, state chaining, budget flags, context
snapshot, idempotency and `turn_recorded` hooks, and each item gets the answer the
single route would have given it. What differs is the shape of the SQL:

1. Keys are claimed for the whole batch in one committed statement
   (`idempotency_claim_many`); replays and reused keys are answered from that read.
2. One transaction does the rest: one statement locks the batch's sessions in id order
   and reads their carts (`sessions_lock_for_turns`, as the single route; the order
   keeps concurrent batches from deadlocking), every item is priced and checked in
   memory (an item that fails is answered alone and writes nothing), then one COPY of
   the turns (their ids drawn from the sequence first), one of the steps, one UPDATE of
   all the sessions' counters (`sessions_save_counters`, as the single route) and one of
   the keys' stored responses.
3. After commit, `turn_recorded` is sent once per turn, in order.

A crash anywhere in step 2 leaves no turn of the batch (one transaction); its claims stay
in flight until `STALE_IN_FLIGHT`, exactly as for a crashed single turn.
"""

from __future__ import annotations

import copy
import json
import operator
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import Field, JSONField, Model
from django.utils import timezone

from sessions_app.errors import ApplicationError, IdempotencyKeyReused, InvalidInput, NotFound
from sessions_app.hooks import turn_recorded
from sessions_app.models import ChatSession, ChatTurn, Tenant, TurnStep
from sessions_app.selectors.budgets import budget_remaining
from sessions_app.selectors.sessions import session_ensure_writable
from sessions_app.services.budgets import budget_reservation_release
from sessions_app.services.idempotency import (
    KeyClaim,
    KeyedRequest,
    idempotency_claim_many,
    idempotency_complete_many,
    idempotency_release_many,
)
from sessions_app.services.snapshots import session_workspace_snapshot
from sessions_app.services.turns import (
    UNCHANGED,
    StepInput,
    TurnRecorded,
    budget_exceeded_warning,
    session_apply_turn,
    sessions_lock_for_turns,
    sessions_save_counters,
    turn_price_steps,
    turn_price_warnings,
    turn_set_totals,
)

Render = Callable[[TurnRecorded, bool], dict[str, Any]]


@dataclass(frozen=True)
class BatchTurn:
    """One valid item: the session, `turn_record`'s keyword arguments, and its key with
    the route scope and body fingerprint the single route would have used."""

    session_id: uuid.UUID
    steps: list[StepInput]
    fields: dict[str, Any]  # user_message, assistant_response, …, state (if given)
    idempotency_key: str | None = None
    request_hash: str = ""

    @property
    def scope(self) -> str:
        """The single route's scope, so a key replays across both routes."""
        return f"POST /sessions/{self.session_id}/turns"


@dataclass
class BatchOutcome:
    """The answer for one item: 201 with the rendered body, or an error."""

    status: int
    body: dict[str, Any] | None = None
    replayed: bool = False
    error: ApplicationError | None = None


@dataclass
class _Pending:
    """An item being recorded: its rows, built in memory before any write."""

    index: int
    item: BatchTurn
    turn: ChatTurn
    steps: list[TurnStep]
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


def turns_record_batch(
    *,
    tenant: Tenant,
    items: list[BatchTurn | None],
    render: Render,
    now: datetime | None = None,
) -> list[BatchOutcome | None]:
    """Record the valid items (None marks an item the caller already refused) and answer
    each one; `render(recorded, keyed)` makes an item's 201 body (JSON-ready when keyed,
    since it is stored for replays). Returns one outcome per item, None where the item
    was None."""
    now = now or timezone.now()
    known, claimed, repeats = _settle_keys(tenant=tenant, items=items)
    todo = [
        (index, item)
        for index, item in enumerate(items)
        if item is not None and index not in known and index not in repeats
    ]
    try:
        recorded = _record(tenant=tenant, todo=todo, claimed=claimed, render=render, now=now)
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
    now: datetime,
) -> dict[int, BatchOutcome]:
    outcomes: dict[int, BatchOutcome] = {}
    if not todo:
        return outcomes
    locked = sessions_lock_for_turns(
        tenant=tenant, ids=sorted({item.session_id for _, item in todo})
    )
    sessions = {pk: entry.session for pk, entry in locked.items()}
    refused: dict[uuid.UUID, ApplicationError] = {}
    for session in sessions.values():
        try:
            session_ensure_writable(session=session, now=now)
        except ApplicationError as exc:
            refused[session.pk] = exc
    # Nothing in a batch changes the workspace (focus, results, cart): one snapshot per
    # session.
    snapshots = {
        session.pk: session_workspace_snapshot(session=session, cart=locked[session.pk].cart)
        for session in sessions.values()
        if session.pk not in refused
    }
    touched: dict[uuid.UUID, ChatSession] = {}
    pending: list[_Pending] = []
    last_index: dict[uuid.UUID, int] = {}

    for index, item in todo:
        found = sessions.get(item.session_id)
        if found is None:
            outcomes[index] = _failed(NotFound("Session not found."))
            continue
        session = found
        if session.pk in refused:
            outcomes[index] = _failed(refused[session.pk])
            continue
        state = item.fields.get("state", UNCHANGED)
        turn = ChatTurn(
            tenant_id=session.tenant_id,
            session=session,
            turn_number=session.last_turn_number + 1,  # safe: the row is locked
            user_message=item.fields.get("user_message", ""),
            assistant_response=item.fields.get("assistant_response", ""),
            intent_data=item.fields.get("intent_data") or {},
            reasoning=item.fields.get("reasoning", ""),
            metadata=item.fields.get("metadata") or {},
            state_before=session.state,
            state_after=session.state if state is UNCHANGED else state,
            context_after=snapshots[session.pk],
            idempotency_key=item.idempotency_key,
        )
        try:
            steps = turn_price_steps(turn=turn, session=session, steps=item.steps, at=now)
        except InvalidInput as exc:
            outcomes[index] = _failed(exc)
            continue
        turn_set_totals(turn=turn, step_rows=steps, duration_ms=item.fields.get("duration_ms"))
        # As the single route: the turn spends a budget reservation (only now, once the
        # item can no longer fail: the batch's transaction keeps what it deletes).
        budget_reservation_release(
            session=session, reservation_id=item.fields.get("reservation_id"), now=now
        )
        turn._prefetched_objects_cache = {"steps": steps}  # type: ignore[attr-defined]

        # The session as the single route would leave it after this turn.
        was_exceeded = budget_remaining(session).exceeded
        session_apply_turn(session=session, turn=turn, state=state, now=now)
        warnings = turn_price_warnings(steps)
        if budget_remaining(session).exceeded:
            warnings.append(budget_exceeded_warning(was_exceeded=was_exceeded))
        touched[session.pk] = session
        last_index[session.pk] = len(pending)
        pending.append(
            _Pending(
                index=index,
                item=item,
                turn=turn,
                steps=steps,
                # A copy: later turns of the batch move the live instance on.
                recorded=TurnRecorded(turn=turn, session=copy.copy(session), warnings=warnings),
                record_id=claimed.get(index),
            )
        )
    if not pending:
        return outcomes
    for position, entry in enumerate(pending):
        entry.later_of_session = last_index[entry.turn.session_id] != position

    turns = [entry.turn for entry in pending]
    for turn, pk in zip(turns, _next_ids(ChatTurn, len(turns)), strict=True):
        turn.pk = pk
    steps = []
    for turn in turns:
        for step in turn._prefetched_objects_cache["steps"]:  # type: ignore[attr-defined]
            step.turn_id = turn.pk
            steps.append(step)
    _copy_rows(ChatTurn, turns, now=now)
    _copy_rows(TurnStep, steps, now=now, with_pk=False)
    sessions_save_counters(list(touched.values()))

    responses: dict[int, tuple[int, dict[str, Any]]] = {}
    for entry in pending:
        body = render(entry.recorded, entry.record_id is not None)
        outcomes[entry.index] = BatchOutcome(status=201, body=body)
        if entry.record_id is not None:
            responses[entry.record_id] = (201, body)
    idempotency_complete_many(responses=responses)
    transaction.on_commit(lambda: _announce(pending))
    return outcomes


def _next_ids(model: type[Model], count: int) -> list[int]:
    """`count` ids from the table's identity sequence, so that the turns can be written
    by COPY (which returns nothing) and their steps still name them."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [model._meta.db_table, model._meta.pk.column, count],  # type: ignore[union-attr]
        )
        return [int(row[0]) for row in cursor.fetchall()]


def _column_value(field: Field[Any, Any], now: datetime) -> Callable[[Model], Any]:
    """How COPY gets one field's value from an instance. The ORM's per-value preparation
    was a third of a batch's CPU; psycopg adapts these Python values itself, except JSON,
    which is written as its text. Built from the model's fields, so columns added to the
    model later are written too."""
    attname = field.attname
    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):

        def stamped(obj: Model) -> Any:
            setattr(obj, attname, now)
            return now

        return stamped
    if isinstance(field, JSONField):

        def as_json(obj: Model) -> Any:
            value = getattr(obj, attname)
            return None if value is None and field.null else json.dumps(value, cls=field.encoder)

        return as_json
    return operator.attrgetter(attname)


def _copy_rows(
    model: type[Model], objects: list[Any], *, now: datetime, with_pk: bool = True
) -> None:
    """Write `objects` with one COPY, then mark them saved."""
    if not objects:
        return
    fields = [f for f in model._meta.concrete_fields if with_pk or not f.primary_key]
    columns = ", ".join(connection.ops.quote_name(str(f.column)) for f in fields)
    values = [_column_value(f, now) for f in fields]
    table = connection.ops.quote_name(model._meta.db_table)
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy,
    ):
        for obj in objects:
            copy.write_row([value(obj) for value in values])
    for obj in objects:
        obj._state.adding = False
        obj._state.db = connection.alias


def _announce(pending: list[_Pending]) -> None:
    """`turn_recorded` once per turn, in order, after commit. `session_turns_follow`
    tells receivers that judge the session as a whole (compaction, runaway) that a later
    turn of the same session comes in this batch, so they may wait for that one."""
    for entry in pending:
        session = entry.recorded.session
        turn_recorded.send(
            sender=ChatTurn,
            turn_id=entry.turn.pk,
            session_id=session.pk,
            tenant_id=session.tenant_id,
            turn=entry.turn,
            session=session,
            session_turns_follow=entry.later_of_session,
        )
