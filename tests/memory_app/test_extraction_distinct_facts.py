"""Distinct facts stay distinct: two facts about one relative are two memories whose
summaries say each fact (not only the relative's name), near-duplicate merging does not
fold one into the other, and one message states a fact once."""

from __future__ import annotations

import pytest

from memory_app.services.memories import MemoryDraft, memory_add_many
from sessions_app.models import Tenant
from tests.memory_app.test_extraction_changes import current, extracted, say

pytestmark = pytest.mark.django_db

BABY = "My sister Ana just had a baby girl named Rita"
PILOT = "My sister Ana is a pilot with TAP"


def test_two_facts_about_one_relative_stay_two_memories(tenant: Tenant) -> None:
    say(tenant, BABY, PILOT)
    memories = extracted(tenant)
    assert sorted(m.summary for m in memories.values()) == [
        "User's sister Ana is a pilot with TAP",
        "User's sister Ana just had a baby girl named Rita",
    ]
    assert current(tenant) == [PILOT, BABY]


def test_close_texts_that_each_say_more_are_not_merged(tenant: Tenant) -> None:
    # Cosine 0.91 with the test embedder, above the merge threshold (0.88).
    texts = ("My sister Ana lives in Porto", "My sister Ana works in Porto")
    drafts = [MemoryDraft(user_id="bob", type="fact", content=text) for text in texts]
    results = memory_add_many(tenant=tenant, drafts=drafts)
    assert [result.action for result in results] == ["created", "created"]
    # One text told again in more detail is still one memory.
    more = MemoryDraft(user_id="bob", type="fact", content="My sister Ana lives in Porto, Portugal")
    [merged] = memory_add_many(tenant=tenant, drafts=[more])
    assert (merged.action, merged.memory.pk) == ("merged", results[0].memory.pk)


def test_one_message_states_a_fact_once(tenant: Tenant) -> None:
    say(tenant, "I moved to Porto last week and I live in Porto now.")
    assert current(tenant) == ["I live in Porto now"]
