"""Turns wait as marks in Valkey and are written as memories by one drain in batches
across sessions and tenants; a lost mark, a Valkey outage and a malformed mark lose no
turn; one drain runs at a time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.db import connection

from memory_app.models import Memory, MemorySource
from memory_app.services import turn_queue
from memory_app.services.turn_queue import turns_remember_pending
from memory_app.valkey import valkey
from sessions_app.models import Tenant
from sessions_app.services.sessions import session_create
from tests.analytics_app.factories import without_memory_reactions
from tests.memory_app.window_helpers import new_session, record

pytestmark = pytest.mark.django_db

TURN = MemorySource.CONVERSATION_TURN


@pytest.fixture
def drain_due() -> Iterator[None]:
    """As if a drain were due: hooks only mark their turns."""
    valkey().set(turn_queue._key("due"), 1, px=60_000)
    try:
        yield
    finally:
        valkey().delete(turn_queue._key("due"))


def _numbers(session: Any) -> list[int]:
    rows = Memory.objects.filter(session_id=session.pk, source=TURN)
    return sorted(rows.values_list("thread_order", flat=True))


def test_one_drain_writes_the_marked_turns_of_every_tenant_each_to_its_owner(
    tenant: Tenant,
    other_tenant: Tenant,
    drain_due: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    ours = new_session(tenant)
    theirs = session_create(tenant=other_tenant, user_id="u1", agent_id="crm")
    with django_capture_on_commit_callbacks(execute=True):
        record(tenant, ours, "Our first line", "ok")
        record(other_tenant, theirs, "Their first line", "ok")
        record(tenant, ours, "Our second line", "ok")
    assert _numbers(ours) == _numbers(theirs) == []  # marked only

    report = turns_remember_pending()
    assert (report.written, report.batches, report.left) == (3, 1, 0)
    for session, owner in ((ours, tenant), (theirs, other_tenant)):
        rows = Memory.objects.filter(session_id=session.pk, source=TURN)
        assert {(m.tenant_id, m.user_id, m.agent_id) for m in rows} == {
            (owner.pk, "u1", session.agent_id)
        }
    assert "Their" not in Memory.objects.get(session_id=ours.pk, thread_order=2).thread_context
    # Drained marks are gone: a second drain writes nothing.
    assert turns_remember_pending().written == 0


def test_a_turn_whose_mark_was_lost_comes_with_the_sessions_next_turn(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    session = new_session(tenant)
    with without_memory_reactions(), django_capture_on_commit_callbacks(execute=True):
        record(tenant, session, "I moved to Porto last spring.", "Nice city.")
    assert _numbers(session) == []
    with django_capture_on_commit_callbacks(execute=True):
        record(tenant, session, "Any tips for the weekend?", "Walk along the river.")
    assert _numbers(session) == [1, 2]


def test_without_valkey_the_sessions_task_remembers_and_extracts(
    tenant: Tenant,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    monkeypatch.setattr(turn_queue, "_valkey_down_until", 0.0)  # restored afterwards
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    session = new_session(tenant)
    with django_capture_on_commit_callbacks(execute=True):
        record(tenant, session, "I'm allergic to peanuts.", "Noted.")
    assert _numbers(session) == [1]
    extracted = Memory.objects.filter(session_id=session.pk).exclude(source=TURN)
    assert [m.structured.get("allergy") for m in extracted] == ["peanuts"]


def test_a_malformed_mark_is_dropped_and_holds_up_nothing(
    tenant: Tenant, drain_due: None, django_capture_on_commit_callbacks: Any
) -> None:
    valkey().zadd(turn_queue._key("pending"), {"garbage": 0, "not-a-uuid:3": 0})
    session = new_session(tenant)
    with django_capture_on_commit_callbacks(execute=True):
        record(tenant, session, "Hello there", "Hi")
    report = turns_remember_pending()
    assert report.written == 1
    assert report.left == 0
    assert _numbers(session) == [1]


def test_one_drain_at_a_time_the_other_leaves_the_marks(
    tenant: Tenant, drain_due: None, django_capture_on_commit_callbacks: Any
) -> None:
    session = new_session(tenant)
    with django_capture_on_commit_callbacks(execute=True):
        record(tenant, session, "Hello there", "Hi")
    db = connection.settings_dict
    with psycopg.connect(
        host=db["HOST"],
        port=db["PORT"],
        user=db["USER"],
        password=db["PASSWORD"],
        dbname=db["NAME"],
        autocommit=True,
    ) as other:
        key = "hashtextextended('engram:' || %s, 0)"
        other.execute(f"SELECT pg_advisory_lock({key})", [turn_queue.DRAIN_LOCK])
        report = turns_remember_pending()
        assert (report.written, report.marks) == (0, 0)
        other.execute(f"SELECT pg_advisory_unlock({key})", [turn_queue.DRAIN_LOCK])
    member = f"{session.pk}:1"
    assert valkey().zscore(turn_queue._key("pending"), member) is not None
    assert turns_remember_pending().written == 1
    assert _numbers(session) == [1]


def test_a_drain_of_many_batches_writes_each_turn_once_with_its_neighbours(
    tenant: Tenant,
    drain_due: None,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Batches are taken while the one before is written (the next one's turns skip the
    turns being written): every turn embedded and written once, and a turn's window
    reaches across batches."""
    real = turn_queue.conversation_embed_turns
    embedded: list[tuple[Any, int]] = []

    def counting(turns: Any) -> Any:
        embedded.extend((turn.session_id, turn.turn_number) for turn in turns)
        return real(turns)

    monkeypatch.setattr(turn_queue, "conversation_embed_turns", counting)
    sessions = [new_session(tenant), session_create(tenant=tenant, user_id="u2", agent_id="x")]
    with django_capture_on_commit_callbacks(execute=True):
        for number in range(1, 6):
            for index, session in enumerate(sessions):
                record(tenant, session, f"line {number} of session {index} zq{number}{index}", "ok")
    report = turns_remember_pending(batch=3)
    assert (report.written, report.marks, report.batches, report.left) == (10, 10, 4, 0)
    assert len(embedded) == len(set(embedded)) == 10
    for index, session in enumerate(sessions):
        rows = Memory.objects.filter(session_id=session.pk, source=TURN).order_by("thread_order")
        assert [row.thread_order for row in rows] == [1, 2, 3, 4, 5]
        for row in rows[:4]:  # each window holds the line after it
            assert f"zq{row.thread_order + 1}{index}" in row.thread_context
    assert turns_remember_pending().written == 0


def test_a_batch_whose_embedding_fails_is_written_session_by_session(
    tenant: Tenant,
    drain_due: None,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session = new_session(tenant)
    with django_capture_on_commit_callbacks(execute=True):
        record(tenant, session, "First line", "ok")
        record(tenant, session, "Second line", "ok")
    real = turn_queue.conversation_embed_turns
    calls: list[int] = []

    def failing_once(turns: Any) -> Any:
        calls.append(len(turns))
        if len(calls) == 1:
            raise RuntimeError("the model failed")
        return real(turns)

    monkeypatch.setattr(turn_queue, "conversation_embed_turns", failing_once)
    report = turns_remember_pending()
    assert (report.written, report.left) == (2, 0)
    assert _numbers(session) == [1, 2]


def test_a_mark_naming_more_turns_than_a_batch_is_written_in_batches_of_turns(
    tenant: Tenant,
    drain_due: None,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A `/turns/batch` marks only each session's last turn: the drain still embeds and
    writes at most a batch of turns at a time, each turn once, oldest recorded first,
    and removes the mark after the last of its turns is written."""
    real = turn_queue.conversation_embed_turns
    sizes: list[list[int]] = []

    def counting(turns: Any) -> Any:
        sizes.append([turn.turn_number for turn in turns])
        return real(turns)

    monkeypatch.setattr(turn_queue, "conversation_embed_turns", counting)
    session = new_session(tenant)
    with without_memory_reactions(), django_capture_on_commit_callbacks(execute=True):
        for number in range(1, 8):
            record(tenant, session, f"line {number} zq{number}", "ok")
    assert turn_queue.turns_mark_pending(marks=[(session.pk, 7)])
    report = turns_remember_pending(batch=3)
    assert sizes == [[1, 2, 3], [4, 5, 6], [7]]
    assert (report.written, report.marks, report.batches, report.left) == (7, 1, 3, 0)
    rows = Memory.objects.filter(session_id=session.pk, source=TURN).order_by("thread_order")
    assert [row.thread_order for row in rows] == list(range(1, 8))
    for row in rows[:6]:  # each window holds the line after it, across batches
        assert f"zq{row.thread_order + 1}" in row.thread_context


def test_a_later_batch_of_a_mark_that_fails_is_written_session_by_session(
    tenant: Tenant,
    drain_due: None,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = turn_queue.conversation_embed_turns

    def failing_second(turns: Any) -> Any:
        if [turn.turn_number for turn in turns] == [3, 4]:
            raise RuntimeError("the model failed")
        return real(turns)

    monkeypatch.setattr(turn_queue, "conversation_embed_turns", failing_second)
    session = new_session(tenant)
    with without_memory_reactions(), django_capture_on_commit_callbacks(execute=True):
        for number in range(1, 6):
            record(tenant, session, f"line {number}", "ok")
    assert turn_queue.turns_mark_pending(marks=[(session.pk, 5)])
    report = turns_remember_pending(batch=2)
    assert (report.written, report.marks, report.left) == (5, 1, 0)
    assert _numbers(session) == [1, 2, 3, 4, 5]
