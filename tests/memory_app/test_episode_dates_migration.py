"""The data migration that dates the episodic memories of compacted spans stored before
they carried a time: each gets its span's last live turn's `occurred_at`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from memory_app.models import Memory, MemorySource
from memory_app.services.compaction import session_compact
from memory_app.services.memories import MemoryDraft, memory_add
from sessions_app.models import ChatTurn, Tenant
from tests.memory_app.window_helpers import new_session, record

BEFORE = ("memory_app", "0006_tenant_lexicon_sums")
AFTER = ("memory_app", "0007_compaction_episodes_dated_by_their_turns")


def _migrate(target: tuple[str, str]) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([target])


@pytest.mark.django_db(transaction=True)
def test_an_undated_episode_gets_its_span_s_time(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    session = new_session(tenant)
    for i in range(11):
        number = record(tenant, session, f"question {i} about part EP-{300 + i}", "answer")
        ChatTurn.objects.filter(session=session, turn_number=number).update(
            occurred_at=datetime(2023, 5, number, 9, tzinfo=UTC)
        )
    with django_capture_on_commit_callbacks(execute=True):
        session_compact(session_id=session.pk)
    episodes = Memory.objects.filter(tenant=tenant, type="episodic", source="system_generated")
    dated = episodes.get().occurred_at
    assert dated is not None and dated.year == 2023
    draft = MemoryDraft(
        user_id=session.user_id,
        type="episodic",
        content="An episode of a summary that no longer exists.",
        structured={"extracted_from": {"summary_id": 987654321}},
        source=MemorySource.SYSTEM_GENERATED,
    )
    other = memory_add(tenant=tenant, draft=draft).memory
    _migrate(BEFORE)
    episodes.update(occurred_at=None)  # as stored before episodes carried a time

    _migrate(AFTER)

    assert episodes.exclude(pk=other.pk).get().occurred_at == dated
    other.refresh_from_db()
    assert other.occurred_at is None
