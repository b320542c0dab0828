"""The compaction decision reads a bounded window yet answers what a full count of the
open window answers (the reference below reads every open turn)."""

from __future__ import annotations

import pytest

from memory_app.window.selectors import compaction_due, turn_text_tokens, window_thresholds
from sessions_app.models import ChatSession, ChatTurn, Tenant
from sessions_app.services.turn_rollback import turn_rollback
from tests.memory_app.window_helpers import new_session, record

pytestmark = pytest.mark.django_db

LONG = "word " * 400  # ~400 tokens, 2,000 bytes


def full_count_reason(session: ChatSession) -> str | None:
    """The reference answer: every open turn read and tokenized, no bound."""
    thresholds = window_thresholds(session)
    open_turns = list(ChatTurn.objects.filter(session=session, compacted=False, rolled_back=False))
    if len(open_turns) <= thresholds.keep_last_turns:
        return None
    if len(open_turns) > thresholds.max_turns:
        return "max_turns"
    if sum(turn_text_tokens(turn) for turn in open_turns) > thresholds.max_tokens:
        return "max_tokens"
    return None


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
    assert compaction_due(session) == full_count_reason(session)


def test_rolled_back_turns_do_not_count(tenant: Tenant) -> None:
    session = new_session(tenant)
    ChatSession.objects.filter(pk=session.pk).update(compact_max_turns=4, compact_keep_last_turns=1)
    for _ in range(6):
        record(tenant, session, "hi", "hello")
    turn_rollback(tenant=tenant, session_id=session.pk, turn_number=3)
    session.refresh_from_db()
    assert compaction_due(session) is None
    assert full_count_reason(session) is None
