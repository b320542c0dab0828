"""Each shortcut of `sessions_app.fastpaths` against the plain ORM or DRF path it stands
in for: the same rows stored, the same instances read, the same validation. (The planned
201 rendering is compared with DRF's in test_turn_batch_parity.py.)"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from sessions_app import fastpaths
from sessions_app.api.serializers_turns import TurnCreateSerializer
from sessions_app.models import BudgetReservation, ChatSession, ChatTurn, Tenant, TurnStep
from sessions_app.services.budgets import budget_check_reserve
from sessions_app.services.sessions import session_create
from sessions_app.services.turn_recording import TurnRecorded, turn_record
from sessions_app.services.turn_totals import StepInput
from sessions_app.usage import TokenCounts

pytestmark = pytest.mark.django_db


def _recorded(tenant: Tenant, **session: Any) -> TurnRecorded:
    created = session_create(tenant=tenant, user_id="u", agent_id="a", **session)
    steps = [
        StepInput(
            step_type="llm",
            model="gpt-4o-mini",
            counts=TokenCounts(input_tokens=120, output_tokens=30, cached_tokens=20),
        ),
        StepInput(step_type="tool", counts=TokenCounts(), success=False, error="timeout"),
    ]
    return turn_record(tenant=tenant, session_id=created.pk, steps=steps, state={"k": [1, "two"]})


def _columns(row: Any, skip: set[str]) -> dict[str, Any]:
    return {
        field.attname: getattr(row, field.attname)
        for field in type(row)._meta.concrete_fields
        if field.attname not in skip
    }


def _step(recorded: TurnRecorded, order: int, **values: Any) -> TurnStep:
    turn, session = recorded.turn, recorded.session
    return TurnStep(
        tenant_id=turn.tenant_id,
        turn=turn,
        session=session,
        user_id=session.user_id,
        agent_id=session.agent_id,
        step_order=order,
        step_type="llm",
        **values,
    )


VARIANTS: list[dict[str, Any]] = [
    {"model": "m", "input_tokens": 5, "cost_usd": Decimal("0.0000012345"), "usage_raw": {"a": 1}},
    {"cost_usd": None, "price_missing": True, "error": None, "usage_raw": None},
    {"success": False, "error": "boom", "prompt": [{"role": "user", "content": "hi"}]},
    {"completion": "done", "tool_output": '{"x": null}', "usage_raw": {"n": None}},
]


def test_rows_insert_and_copy_store_what_the_orm_stores(tenant: Tenant) -> None:
    recorded = _recorded(tenant)
    now = timezone.now()
    orm = [_step(recorded, 10 + n, **values) for n, values in enumerate(VARIANTS)]
    inserted = [_step(recorded, 20 + n, **values) for n, values in enumerate(VARIANTS)]
    copied = [_step(recorded, 30 + n, **values) for n, values in enumerate(VARIANTS)]
    with transaction.atomic():
        for step in orm:
            step.save()
        fastpaths.rows_insert(TurnStep, inserted, now=now)
        fastpaths.rows_copy(TurnStep, copied, now=now, with_pk=False)
    assert all(step.pk is not None and not step._state.adding for step in inserted)

    def stored(steps: list[TurnStep]) -> list[dict[str, Any]]:
        orders = [step.step_order for step in steps]
        rows = TurnStep.objects.filter(turn=recorded.turn, step_order__in=orders)
        return [_columns(row, {"id", "created_at", "step_order"}) for row in rows]

    assert stored(inserted) == stored(orm)
    assert stored(copied) == stored(orm)


def test_the_session_lock_read_is_the_orm_s_instance(tenant: Tenant) -> None:
    recorded = _recorded(tenant, budget_tokens=5000, budget_usd=None)
    session_id = recorded.session.pk
    with transaction.atomic():
        [(session, cart, reservations_held)] = fastpaths.sessions_select_for_turns(
            tenant_id=tenant.pk, ids=[session_id]
        )
    assert cart == [] and reservations_held is False
    assert _columns(session, set()) == _columns(ChatSession.objects.get(pk=session_id), set())
    assert fastpaths.sessions_select_for_turns(tenant_id=tenant.pk + 1, ids=[session_id]) == []


def _reservation_deletes(tenant: Tenant, session_id: Any) -> list[str]:
    """The DELETEs of budget reservations that recording one turn issues."""
    with CaptureQueriesContext(connection) as queries:
        turn_record(tenant=tenant, session_id=session_id, steps=[])
    return [q["sql"] for q in queries if "DELETE FROM budget_reservation" in q["sql"]]


def test_the_lock_read_tells_whether_reservations_are_held_and_turns_spend_them(
    tenant: Tenant,
) -> None:
    """Without reservations a turn skips the release; with one, live or ended, the lock
    read says so and the turn releases as the plain path does."""
    session_id = _recorded(tenant, budget_tokens=5000).session.pk
    assert _reservation_deletes(tenant, session_id) == []
    now = timezone.now()
    live = budget_check_reserve(
        tenant=tenant, session_id=session_id, estimated_tokens=10, reserve=True
    ).reservation
    ended = BudgetReservation.objects.create(
        session_id=session_id, tokens=5, created_at=now - timedelta(minutes=5),
        expires_at=now - timedelta(minutes=1),
    )  # fmt: skip
    assert live is not None
    with transaction.atomic():
        [read] = fastpaths.sessions_select_for_turns(tenant_id=tenant.pk, ids=[session_id])
    assert read.reservations_held is True
    assert len(_reservation_deletes(tenant, session_id)) == 1
    assert not BudgetReservation.objects.filter(pk__in=[live.pk, ended.pk]).exists()
    with transaction.atomic():
        [read] = fastpaths.sessions_select_for_turns(tenant_id=tenant.pk, ids=[session_id])
    assert read.reservations_held is False


def _move_counters(session: ChatSession, now: datetime) -> None:
    session.turn_count += 2
    session.last_turn_number += 2
    session.total_input_tokens += 1000
    session.total_cost_usd += Decimal("0.0123456789")
    session.total_errors += 1
    session.last_active_at = now
    session.updated_at = now
    session.budget_exceeded_at = now
    session.state = {"cart": ["x"], "n": None}


def test_the_counter_update_writes_what_save_writes(tenant: Tenant) -> None:
    ids = [_recorded(tenant).session.pk for _ in range(4)]
    with_orm, one, *many = (ChatSession.objects.get(pk=pk) for pk in ids)
    now = timezone.now()
    for session in (with_orm, one, *many):
        _move_counters(session, now)
    with transaction.atomic():
        with_orm.save(update_fields=[*fastpaths.sessions._COUNTER_COLUMNS, "state"])
        fastpaths.sessions_save_counters([one])
        fastpaths.sessions_save_counters(many)
    # `save()` stamps updated_at itself (auto_now); the fast path writes the instance's.
    skip = {"id", "created_at", "expires_at", "updated_at"}
    expected = _columns(ChatSession.objects.get(pk=with_orm.pk), skip)
    for pk in ids[1:]:
        stored = ChatSession.objects.get(pk=pk)
        assert _columns(stored, skip) == expected
        assert stored.updated_at == now


def test_preloaded_steps_are_what_a_query_returns(
    tenant: Tenant, django_assert_num_queries: Any
) -> None:
    recorded = _recorded(tenant)
    with django_assert_num_queries(0):
        preloaded = list(recorded.turn.steps.all())
    queried = list(TurnStep.objects.filter(turn=recorded.turn))
    # Every column but the id, which the steps' COPY does not read back (the 201 body
    # does not show step ids).
    assert [_columns(s, {"id"}) for s in preloaded] == [_columns(s, {"id"}) for s in queried]


def _errors(serializer: TurnCreateSerializer, body: Any) -> Any:
    try:
        return serializer.run_validation(body)
    except ValidationError as exc:
        return exc.detail


def test_a_shared_serializer_validates_as_a_fresh_one() -> None:
    shared = fastpaths.shared_serializer(TurnCreateSerializer)
    assert fastpaths.shared_serializer(TurnCreateSerializer) is shared
    bodies = [
        {"user_message": "hi", "steps": [{"step_type": "llm", "input_tokens": 3}]},
        {"steps": [{"step_type": "", "input_tokens": -1}], "duration_ms": "x"},
        {"steps": "not a list"},
        {"user_message": "again", "steps": []},
    ]
    for body in bodies:
        assert _errors(shared, body) == _errors(TurnCreateSerializer(), body)


def _instance_state(obj: Any) -> tuple[dict[str, Any], dict[str, Any], bool, Any]:
    # A default of "now" differs by the microseconds between the two constructions.
    attributes = {
        k: type(v) if k == "occurred_at" else v for k, v in obj.__dict__.items() if k != "_state"
    }
    return attributes, dict(obj._state.fields_cache), obj._state.adding, obj._state.db


def test_a_new_instance_is_what_the_constructor_makes(tenant: Tenant) -> None:
    """Related instances (saved or not), ids, defaults (callable ones fresh per instance)
    and explicit values: the same attributes and relation cache as `Model(**values)`."""
    recorded = _recorded(tenant)
    session, unsaved_turn = recorded.session, ChatTurn(session=recorded.session, turn_number=9)
    cases: list[tuple[type[Any], dict[str, Any]]] = [
        (ChatTurn, {"tenant_id": tenant.pk, "session": session, "turn_number": 2}),
        (ChatTurn, {"session_id": session.pk, "intent_data": {"i": 1}, "state_after": None}),
        (TurnStep, {"turn": unsaved_turn, "session": session, "step_order": 1, "model": "m"}),
        (TurnStep, {"turn": recorded.turn, "session": None, "cost_usd": Decimal("0.5")}),
        (TurnStep, {}),
    ]
    for model, values in cases:
        fast, plain = fastpaths.instance_new(model, **values), model(**values)
        assert _instance_state(fast) == _instance_state(plain), (model, values)
    first, second = fastpaths.instance_new(ChatTurn), fastpaths.instance_new(ChatTurn)
    assert first.metadata == {} and first.metadata is not second.metadata
    with pytest.raises(TypeError):
        fastpaths.instance_new(ChatTurn, no_such_field=1)
