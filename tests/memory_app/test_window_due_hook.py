"""The after-turn compaction check reads a bounded window yet answers what the full
`compaction_due` answers."""

from __future__ import annotations

import pytest

from memory_app.selectors.context import compaction_due, compaction_due_reason
from sessions_app.models import ChatSession, Tenant
from sessions_app.services.turns import turn_rollback
from tests.memory_app.window_helpers import new_session, record

pytestmark = pytest.mark.django_db

LONG = "word " * 400  # ~400 tokens, 2,000 bytes


@pytest.mark.parametrize(
    ("max_turns", "max_tokens", "keep_last", "turns", "text"),
    [
        (10, 8000, 6, 5, "hi"),  # below both
        (10, 8000, 6, 11, "hi"),  # over max_turns
        (10, 8000, 12, 11, "hi"),  # over max_turns but all kept: nothing compactable
        (10, 1000, 2, 4, LONG),  # over the tokens, bytes bound says "tokenize"
        (10, 5000, 2, 4, LONG),  # bytes over, tokens under
        (3, 8000, 0, 3, "hi"),  # exactly at max_turns
        (0, 8000, 0, 1, "hi"),  # zero thresholds
    ],
)
def test_bounded_check_agrees_with_the_full_one(
    tenant: Tenant, max_turns: int, max_tokens: int, keep_last: int, turns: int, text: str
) -> None:
    session = new_session(tenant)
    ChatSession.objects.filter(pk=session.pk).update(
        compact_max_turns=max_turns,
        compact_max_tokens=max_tokens,
        compact_keep_last_turns=keep_last,
    )
    for _ in range(turns):
        record(tenant, session, text, text)
    session.refresh_from_db()
    assert compaction_due_reason(session) == compaction_due(session).reason


def test_rolled_back_turns_do_not_count(tenant: Tenant) -> None:
    session = new_session(tenant)
    ChatSession.objects.filter(pk=session.pk).update(compact_max_turns=4, compact_keep_last_turns=1)
    for _ in range(6):
        record(tenant, session, "hi", "hello")
    turn_rollback(tenant=tenant, session_id=session.pk, turn_number=3)
    session.refresh_from_db()
    assert compaction_due_reason(session) is None
    assert compaction_due(session).reason is None
