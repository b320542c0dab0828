"""The lines around the pool's lead in its conversation get a small credit (part
`thread`): the step on its own over hand-made candidates, and through HTTP with the
real model and PostgreSQL, where the line that answers stands beside the one that
matches best."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from rest_framework.test import APIClient

from memory_app.selectors.search.pool import Candidate
from memory_app.selectors.search.thread_neighbours import (
    NEIGHBOUR_REACH,
    NEIGHBOUR_WEIGHT,
    apply_thread_neighbours,
)
from memory_app.selectors.search_time import BEGAN_AFTER_FACTOR
from tests.memory_app.score_helpers import score_of_parts
from tests.memory_app.test_memories_api import MEMORIES, add

WHEN = datetime(2023, 5, 30, tzinfo=UTC)


def _candidate(thread_key: str = "", thread_order: int | None = None) -> Candidate:
    return Candidate(0.5, 1.0, WHEN, 0.5, 0, None, 100, thread_key=thread_key,
                     thread_order=thread_order)  # fmt: skip


def _credits(scored: list[Any], candidates: dict[uuid.UUID, Candidate]) -> dict[uuid.UUID, float]:
    return {pk: parts["thread"] for pk, _, parts in apply_thread_neighbours(scored, candidates)}


def test_the_lead_s_neighbours_within_reach_are_credited() -> None:
    lead, before, after, far, other_thread, unthreaded = (uuid.uuid4() for _ in range(6))
    candidates = {
        lead: _candidate("chat-1", 10),
        before: _candidate("chat-1", 10 - NEIGHBOUR_REACH),
        after: _candidate("chat-1", 11),
        far: _candidate("chat-1", 10 + NEIGHBOUR_REACH + 1),
        other_thread: _candidate("chat-2", 11),
        unthreaded: _candidate(),
    }
    scored = [(lead, 0.9, {"relevance": 1.0})] + [
        (pk, 0.5, {"relevance": 0.5}) for pk in (before, after, far, other_thread, unthreaded)
    ]
    out = {pk: (score, parts) for pk, score, parts in apply_thread_neighbours(scored, candidates)}
    assert {pk: parts["thread"] for pk, (_, parts) in out.items()} == {
        lead: 0.0, before: NEIGHBOUR_WEIGHT, after: NEIGHBOUR_WEIGHT, far: 0.0,
        other_thread: 0.0, unthreaded: 0.0,
    }  # fmt: skip
    assert out[after][0] == pytest.approx(0.5 + NEIGHBOUR_WEIGHT)
    assert out[far][0] == 0.5 and out[lead][0] == 0.9


def test_the_lead_is_the_best_scored_member_with_ties_to_the_more_relevant() -> None:
    first, second, beside_first, beside_second = (uuid.uuid4() for _ in range(4))
    candidates = {
        first: _candidate("chat-1", 0),
        beside_first: _candidate("chat-1", 1),
        second: _candidate("chat-2", 0),
        beside_second: _candidate("chat-2", 1),
    }
    rest = [(beside_first, 0.2, {"relevance": 0.1}), (beside_second, 0.2, {"relevance": 0.1})]
    # The higher score leads.
    scored = [(first, 0.7, {"relevance": 0.8}), (second, 0.6, {"relevance": 1.0}), *rest]
    credits = _credits(scored, candidates)
    assert (credits[beside_first], credits[beside_second]) == (NEIGHBOUR_WEIGHT, 0.0)
    # Level scores: the more relevant leads.
    scored = [(first, 0.7, {"relevance": 0.8}), (second, 0.7, {"relevance": 1.0}), *rest]
    credits = _credits(scored, candidates)
    assert (credits[beside_first], credits[beside_second]) == (0.0, NEIGHBOUR_WEIGHT)


def test_a_neighbour_begun_after_the_named_time_gets_half_the_credit() -> None:
    lead, later = uuid.uuid4(), uuid.uuid4()
    candidates = {lead: _candidate("chat-1", 0), later: _candidate("chat-1", 1)}
    scored = [(lead, 0.9, {"relevance": 1.0}), (later, 0.3, {"relevance": 0.4, "began_after": 1.0})]
    out = {pk: (score, parts) for pk, score, parts in apply_thread_neighbours(scored, candidates)}
    assert out[later][1]["thread"] == pytest.approx(NEIGHBOUR_WEIGHT * BEGAN_AFTER_FACTOR)
    assert out[later][0] == pytest.approx(0.3 + NEIGHBOUR_WEIGHT * BEGAN_AFTER_FACTOR)


def test_a_memory_outside_threads_ranked_first_leaves_the_best_line_the_lead() -> None:
    # A fact extracted from a turn has no thread; it may rank above the turn it came
    # from, and the turn's neighbours are still credited.
    fact, line, beside = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    candidates = {
        fact: _candidate(),
        line: _candidate("chat-1", 4),
        beside: _candidate("chat-1", 5),
    }
    scored = [
        (fact, 0.95, {"relevance": 1.0}), (line, 0.8, {"relevance": 0.9}),
        (beside, 0.4, {"relevance": 0.3}),
    ]  # fmt: skip
    assert _credits(scored, candidates) == {fact: 0.0, line: 0.0, beside: NEIGHBOUR_WEIGHT}


def test_no_member_in_a_thread_credits_nobody() -> None:
    one, other = uuid.uuid4(), uuid.uuid4()
    candidates = {one: _candidate(), other: _candidate("chat-1", None)}
    scored = [(one, 0.9, {"relevance": 1.0}), (other, 0.3, {"relevance": 0.4})]
    assert _credits(scored, candidates) == {one: 0.0, other: 0.0}
    assert apply_thread_neighbours([], candidates) == []


# A conversation in which the question's words are in the line before the answer: the
# date of the race is said in a line that shares no word with the question. No line
# names its speaker, so no speaker weight (search.speaker) takes part.
CONVERSATION = [
    "Morning! Did you see the new bakery on Elm Street?",
    "Not yet, is it any good?",
    "Their croissants are great. How did the charity race go, Melanie?",
    "Last Saturday, early, before the heat came. I finished in 31 minutes!",
    "Wow, well done. I should start jogging again.",
    "We could go together on Sundays.",
    "Deal. I will bring the water bottles.",
    "The kids want a picnic afterwards too.",
]
OTHERS = (
    # Outside any thread, as a fact extracted from the conversation is: it shares the
    # question's words and ranks above every line, and is passed over as the lead.
    "Melanie ran the charity race",
    "Prefers aisle seats on long flights",
    "Allergic to penicillin",
    "Drives a blue 2015 Honda Civic",
    "Volunteers at the animal shelter on weekends",
    "Booked a table for Friday night at the Italian place",
)


def _search(api: APIClient, query: str) -> list[dict[str, Any]]:
    response = api.post(
        f"{MEMORIES}/search", {"query": query, "user_id": "alice", "limit": 20}, format="json"
    )
    assert response.status_code == 200, response.content
    return list(response.json()["results"])


@pytest.fixture
def conversation(api: APIClient) -> list[str]:
    ids = []
    for order, line in enumerate(CONVERSATION):
        response = add(api, content=line, type="episodic", thread_key="chat-1", thread_order=order)
        assert response.status_code == 201, response.content
        ids.append(str(response.json()["memory"]["id"]))
    for content in OTHERS:
        assert add(api, content=content, type="episodic").status_code == 201
    return ids


def test_the_line_beside_the_best_match_is_credited(
    api: APIClient, conversation: list[str]
) -> None:
    results = _search(api, "When did Melanie run the charity race?")
    hits = {hit["memory"]["id"]: hit for hit in results}
    assert results[0]["memory"]["thread_key"] == "", results[0]["memory"]["content"]
    assert results[0]["parts"]["thread"] == 0.0
    lead = next(hit["memory"]["id"] for hit in results if hit["memory"]["thread_key"])
    assert lead == conversation[2], [hit["memory"]["content"] for hit in results[:3]]
    assert hits[lead]["parts"]["thread"] == 0.0
    # The answer, and every other line within reach of the lead, carry the credit in
    # their score; the line past the reach and the memories outside the thread do not.
    for order, memory_id in enumerate(conversation):
        expected = NEIGHBOUR_WEIGHT if 0 < abs(order - 2) <= NEIGHBOUR_REACH else 0.0
        assert hits[memory_id]["parts"]["thread"] == expected, (order, CONVERSATION[order])
    for hit in results:
        if hit["memory"]["id"] not in conversation:
            assert hit["parts"]["thread"] == 0.0
    answer = hits[conversation[3]]
    parts = answer["parts"]
    expected_score = score_of_parts(parts)
    assert answer["score"] == pytest.approx(expected_score, abs=1e-5)
    # The answer stands among the first four, after the fact and its question.
    order = [hit["memory"]["id"] for hit in results]
    assert order.index(conversation[3]) < 4, [hit["memory"]["content"] for hit in results[:4]]
