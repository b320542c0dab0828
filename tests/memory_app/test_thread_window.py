"""The lexical window of a memory in a thread: whole short neighbours, only the near end
of a long one."""

from __future__ import annotations

import pytest

from memory_app.selectors.memories import Actor
from memory_app.selectors.search import memory_search
from memory_app.services.memories import MemoryDraft, memory_add_many
from memory_app.services.thread_writes import NEIGHBOUR_CHARS, neighbour_part, window_text
from sessions_app.models import Tenant

# A long message of a chat with an assistant, then a short follow-up, then another topic.
LONG = (
    "I'm planning a trip to Lisbon next spring and I've been reading about the old tram "
    "lines, the tiled facades and the pastry shops in Belem. My sister keeps telling me to "
    "stay in Alfama, but I'm worried about the hills with my knee. The one thing I know for "
    "sure is that I want to see a fado concert on the last night."
)
REPLY = "Yes, the one on Friday."
OTHER = (
    "Separately, can you suggest a good beginner watercolour set? I started painting "
    "landscapes in the evenings and the cheap pans I bought are chalky and hard to mix. "
    "Also my cat knocks the water jar over every single time I sit down."
)


def test_short_neighbours_are_whole() -> None:
    lines = ["Ana: Did you go?", "Ben: Yes, last Friday.", "Ana: How was it?"]
    assert window_text(lines, 1) == "\n".join(lines)
    assert window_text(lines, 0) == "\n".join(lines[:2])


def test_a_long_neighbour_gives_its_near_end_only() -> None:
    window = window_text([LONG, REPLY, OTHER], 1)
    before, own, after = window.split("\n")
    assert own == REPLY
    assert LONG.endswith(before) and len(before) <= NEIGHBOUR_CHARS
    assert "fado concert" in before and "tram" not in before
    assert OTHER.startswith(after) and len(after) <= NEIGHBOUR_CHARS
    assert "watercolour" in after and "cat" not in after


def test_a_neighbour_part_never_halves_a_word() -> None:
    for text in (LONG, OTHER):
        words = set(text.split())
        for before in (True, False):
            part = neighbour_part(text, before=before)
            assert set(part.split()) <= words
            assert part and part != text


@pytest.mark.django_db
def test_a_long_message_is_not_found_by_the_middle_of_its_neighbour(tenant: Tenant) -> None:
    """The words in the middle of a long neighbour (tram, facades) find the message that
    says them, not the reply after it; the end of the neighbour (fado) still finds the
    reply through its window."""
    drafts = [
        MemoryDraft(user_id="u", content=text, type="episodic", thread_key="session:1")
        for text in (LONG, REPLY, OTHER)
    ]
    memories = [result.memory for result in memory_add_many(tenant=tenant, drafts=drafts)]
    actor = Actor("u")

    def lexical(query: str) -> list[str]:
        outcome = memory_search(
            tenant=tenant, actor=actor, query=query, user_id="u", mode="lexical", limit=5
        )
        return [hit.memory.content for hit in outcome.hits]

    assert lexical("tram facades") == [LONG]
    found = lexical("fado concert")
    assert found[0] == LONG and REPLY in found
    assert memories[1].thread_context.split("\n")[0] in LONG
