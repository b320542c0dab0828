"""At most one queued compaction per session (memory_app.window.pending), on the real
Valkey: while one is queued, further due turns publish none; once it starts (the task
clears the mark), the next due turn queues the next one."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from memory_app.window.models import ContextSummary
from memory_app.window.pending import compaction_pending_clear, compaction_pending_mark
from sessions_app.models import ChatSession, ChatTurn, Tenant
from tests.memory_app.window_helpers import new_session, record

pytestmark = pytest.mark.django_db


def compacted(session: ChatSession) -> int:
    return ChatTurn.objects.filter(session=session, compacted=True).count()


def test_the_mark_is_taken_once_until_cleared(tenant: Tenant) -> None:
    session = new_session(tenant)
    assert compaction_pending_mark(session.pk) is True
    assert compaction_pending_mark(session.pk) is False  # one is queued already
    assert compaction_pending_mark(new_session(tenant).pk) is True  # per session
    compaction_pending_clear(session.pk)
    assert compaction_pending_mark(session.pk) is True


@override_settings(ENGRAM_COMPACTION_PENDING_SECONDS=60)
def test_due_turns_queue_no_second_compaction_while_one_is_pending(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    session = new_session(tenant)
    ChatSession.objects.filter(pk=session.pk).update(compact_max_turns=4, compact_keep_last_turns=2)
    assert compaction_pending_mark(session.pk)  # as if a compaction were queued, not run
    for n in range(6):
        with django_capture_on_commit_callbacks(execute=True):  # the hook, after commit
            record(tenant, session, f"question {n}", f"answer {n}")
    # Past max_turns, yet no second compaction was published (eager Celery would run it).
    assert compacted(session) == 0 and not ContextSummary.objects.filter(session=session)

    compaction_pending_clear(session.pk)  # the queued one started
    with django_capture_on_commit_callbacks(execute=True):
        record(tenant, session, "question 6", "answer 6")
    assert compacted(session) == 5  # all but the last two of seven
    # The task cleared its own mark when it started: the next due turn may queue again.
    assert compaction_pending_mark(session.pk) is True


def test_a_turn_reads_the_window_only_while_no_compaction_is_queued(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    """The hook's Valkey round trip that marks the turn also tells whether the session's
    compaction is queued: then the window is not read (it could publish nothing)."""
    session = new_session(tenant)

    def window_reads() -> int:
        with (
            CaptureQueriesContext(connection) as queries,
            django_capture_on_commit_callbacks(execute=True),
        ):
            record(tenant, session, "a question", "an answer")
        return sum("NOT compacted" in q["sql"] for q in queries)

    assert window_reads() == 1
    assert compaction_pending_mark(session.pk)  # as if a compaction were queued
    assert window_reads() == 0
    compaction_pending_clear(session.pk)
    assert window_reads() == 1
