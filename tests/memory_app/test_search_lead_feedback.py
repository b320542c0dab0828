"""The lead's words as the fusion's third signal (part `feedback`): the pool's lexemes and
the signal held to BM25's definition computed here from the rows, and through HTTP with
the real model and PostgreSQL, where a line that shares the lead's rarer words but not
the question's rises.
"""

from __future__ import annotations

import math
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from memory_app.selectors.memories import Actor
from memory_app.selectors.search import feedback, memory_search
from memory_app.selectors.search.bm25 import BM25_B, BM25_K1
from memory_app.selectors.search.feedback import FEEDBACK_TERMS, lead_words_bm25
from memory_app.selectors.search.fusion import SearchMode, fuse_scores
from memory_app.selectors.search.pool import Candidate
from memory_app.selectors.search_time import BEGAN_AFTER_FACTOR
from sessions_app.models import Tenant
from tests.memory_app.score_helpers import score_of_parts
from tests.memory_app.test_memories_api import MEMORIES, add

pytestmark = pytest.mark.django_db

# Two sessions of one conversation. The question's words ("charity", "race") are in the
# lead (first session); the result is told in the second session, far from it, in words
# of the lead ("Riverside", "shelter", "kennels") and none of the question's.
FIRST = [
    "Caroline: Morning! Did you see the new bakery on Elm Street?",
    "Melanie: Not yet, is it any good?",
    "Caroline: How did the charity race for the Riverside animal shelter kennels go?",
    "Melanie: Long story, I will tell you next week.",
    "Caroline: Sure. Are the kids back at school?",
]
SECOND = [
    "Melanie: Guess what, I finally fixed the garden fence.",
    "Caroline: Nice! Was it hard?",
    "Melanie: A whole weekend of work, but it stands.",
    "Caroline: Did you paint it?",
    "Melanie: Green, like the shed.",
    "Caroline: Lovely colour.",
    "Melanie: The Riverside shelter got enough for new kennels, all thanks to the runners!",
    "Caroline: We should plan a picnic soon.",
]
OTHERS = (
    "Caroline: I love running in the park before work.",
    "Melanie: The school fair raised money for books.",
    "Caroline: My sister runs a bakery downtown.",
    "Melanie: We watched a documentary about race cars.",
    "Caroline: The weather has been lovely all week.",
    "Melanie: I started a pottery class on Tuesdays.",
    "Caroline: My cousin is visiting from Madrid in June.",
    "Melanie: The kids built a treehouse with their dad.",
    "Caroline: I am reading a novel about a lighthouse keeper.",
    "Melanie: We tried a new pasta recipe last night.",
    "Caroline: The museum has a new dinosaur exhibit.",
    "Melanie: My phone screen cracked again.",
    "Caroline: I adopted a cat named Pixel.",
    "Melanie: The garden tomatoes are finally ripe.",
    "Caroline: I signed up for a photography workshop.",
    "Melanie: Our neighbours threw a barbecue on Sunday.",
)
QUESTION = "How did the charity race go?"
WHEN = datetime(2023, 5, 30, tzinfo=UTC)
ANSWER = SECOND[6]


def _add_line(api: APIClient, content: str, thread: str, order: int) -> str:
    response = add(api, content=content, type="episodic", thread_key=thread, thread_order=order)
    assert response.status_code == 201, response.content
    return str(response.json()["memory"]["id"])


@pytest.fixture
def conversation(api: APIClient) -> dict[str, str]:
    """The lines' ids by their text."""
    ids = {line: _add_line(api, line, "session-1", order) for order, line in enumerate(FIRST)}
    ids |= {line: _add_line(api, line, "session-2", 100 + n) for n, line in enumerate(SECOND)}
    ids |= {line: _add_line(api, line, "session-3", 200 + n) for n, line in enumerate(OTHERS)}
    return ids


def _search(api: APIClient, query: str, **fields: Any) -> list[dict[str, Any]]:
    body = {"query": query, "user_id": "alice", "limit": 40, **fields}
    response = api.post(f"{MEMORIES}/search", body, format="json")
    assert response.status_code == 200, response.content
    return list(response.json()["results"])


def _rows(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def _lexemes(pk: str) -> set[str]:
    """The distinct lexemes of a memory's `lexical_vector`, read with unnest()."""
    return {row[0] for row in _rows(
        "SELECT lexeme FROM memory, unnest(lexical_vector) WHERE id = %s", [pk]
    )}  # fmt: skip


def _definition(lead: str, ids: list[str]) -> dict[str, float]:
    """BM25 of the lead's FEEDBACK_TERMS rarest lexemes over each member, from its
    definition: the lead's distinct lexemes, their document frequencies over the members
    (the lead among them), IDF ln(1 + (N - df + 0.5) / (df + 0.5)), the rarest first
    (ties by lexeme); a member's term frequency 1 for a lexeme it holds, its length =
    its distinct lexemes against the members' average."""
    held = {pk: _lexemes(pk) for pk in ids}
    words = held[lead]
    count = len(ids)
    idf = {}
    for word in words:
        df = sum(1 for lexemes in held.values() if word in lexemes)
        idf[word] = math.log(1 + (count - df + 0.5) / (df + 0.5))
    terms = sorted(idf, key=lambda word: (-idf[word], word))[:FEEDBACK_TERMS]
    average = sum(len(lexemes) for lexemes in held.values()) / count
    out: dict[str, float] = {}
    for pk, lexemes in held.items():
        norm = BM25_K1 * (1 - BM25_B + BM25_B * len(lexemes) / average)
        out[pk] = sum(idf[t] * (BM25_K1 + 1) / (1 + norm) for t in terms if t in lexemes)
    return out


def _pool_lexemes(tenant: Tenant, mode: SearchMode) -> dict[str, tuple[str, ...]]:
    """Each pool member's `Candidate.lexemes` in a search of QUESTION in `mode`."""
    from memory_app.selectors.search import engine

    pools: list[Any] = []
    read = engine.read_pool

    def keep(*args: Any, **kwargs: Any) -> Any:
        pools.append(read(*args, **kwargs))
        return pools[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "read_pool", keep)
        memory_search(tenant=tenant, actor=Actor(user_id="alice"), query=QUESTION,
                      user_id="alice", mode=mode)  # fmt: skip
    (pool,) = pools
    return {str(pk): candidate.lexemes for pk, candidate in pool.candidates.items()}


def test_a_hybrid_pool_brings_each_member_s_distinct_lexemes(
    tenant: Tenant, conversation: dict[str, str]
) -> None:
    found = _pool_lexemes(tenant, "hybrid")
    assert len(found) > 10
    for pk, lexemes in found.items():
        assert len(lexemes) == len(set(lexemes)) and set(lexemes) == _lexemes(pk)


@pytest.mark.parametrize("mode", ["vector", "lexical"])
def test_a_pool_of_one_signal_reads_no_lexemes(
    tenant: Tenant, conversation: dict[str, str], mode: SearchMode
) -> None:
    found = _pool_lexemes(tenant, mode)
    assert found and all(lexemes == () for lexemes in found.values())


def test_the_signal_is_bm25_of_the_lead_s_rarest_words_over_the_pool(
    conversation: dict[str, str],
) -> None:
    lead = conversation[FIRST[2]]
    ids = list(conversation.values())
    found = lead_words_bm25(tuple(_lexemes(lead)), [tuple(_lexemes(pk)) for pk in ids])
    expected = _definition(lead, ids)
    for pk, value in zip(ids, found, strict=True):
        assert value == pytest.approx(expected[pk], rel=1e-9)
    # The answer shares the lead's rare words; a line of its session that shares only a
    # speaker's name with the lead scores a fraction of it.
    assert expected[conversation[ANSWER]] > 10 * expected[conversation[SECOND[3]]] > 0


def test_few_rarest_words_only(conversation: dict[str, str],
                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    # With one term, only the lead's rarest word counts: fewer members share it.
    lead = tuple(_lexemes(conversation[FIRST[2]]))
    members = [tuple(_lexemes(pk)) for pk in conversation.values()]
    monkeypatch.setattr(feedback, "FEEDBACK_TERMS", 1)
    one = lead_words_bm25(lead, members)
    monkeypatch.setattr(feedback, "FEEDBACK_TERMS", FEEDBACK_TERMS)
    every = lead_words_bm25(lead, members)
    assert 0 < sum(value > 0 for value in one) < sum(value > 0 for value in every)


def _relevance(results: list[dict[str, Any]], memory_id: str) -> float:
    return float(next(h["parts"]["relevance"] for h in results if h["memory"]["id"] == memory_id))


def test_a_line_in_the_lead_s_words_gains_on_lines_that_match_the_question_as_well(
    api: APIClient, conversation: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    results = _search(api, QUESTION)
    hits = {hit["memory"]["id"]: hit for hit in results}
    assert results[0]["memory"]["id"] == conversation[FIRST[2]], results[0]["memory"]["content"]
    answer = hits[conversation[ANSWER]]
    assert answer["parts"]["feedback"] > 0 and answer["parts"]["lexical"] == 0
    # The lines of its session whose window does not hold it share only the speakers'
    # names with the lead.
    around = [hits[conversation[line]]["parts"]["feedback"] for line in SECOND[:5]]
    assert answer["parts"]["feedback"] > 3 * max(around), around
    # Its score is the final score of the re-fused relevance.
    parts = answer["parts"]
    expected_score = score_of_parts(parts)
    assert answer["score"] == pytest.approx(expected_score, abs=1e-5)
    # A line as near the question by its cosine that shares a word of the question but
    # few of the lead's is overtaken by less without the lead's words.
    rival = conversation[OTHERS[3]]
    assert hits[rival]["parts"]["feedback"] < answer["parts"]["feedback"]
    gap = _relevance(results, rival) - _relevance(results, conversation[ANSWER])
    monkeypatch.setattr(feedback, "FEEDBACK_WEIGHT", 0.0)
    plain = _search(api, QUESTION)
    assert all(hit["parts"]["feedback"] >= 0 for hit in plain)
    assert gap < _relevance(plain, rival) - _relevance(plain, conversation[ANSWER])


def _hit(relevance: float, **parts: float) -> tuple[float, dict[str, float]]:
    return 0.6 * relevance, {"relevance": relevance, **parts}


def _candidate(semantic: float, lexical: float, thread: str = "chat") -> Candidate:
    return Candidate(semantic, lexical, WHEN, 0.5, 0, None, 100, thread_key=thread,
                     thread_order=0 if thread else None)  # fmt: skip


def test_the_signal_is_fused_and_the_score_moves_with_the_relevance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lead, shares, later, none = (uuid.uuid4() for _ in range(4))
    candidates = {lead: _candidate(0.8, 5.0), shares: _candidate(0.3, 0.0),
                  later: _candidate(0.3, 0.0), none: _candidate(0.35, 1.0)}  # fmt: skip
    plain = fuse_scores({pk: (c.semantic, c.lexical) for pk, c in candidates.items()}, (0.5, 0.5))
    scored = [
        (lead, *_hit(plain[lead])), (shares, *_hit(plain[shares])),
        (later, *_hit(plain[later], began_after=1.0)), (none, *_hit(plain[none])),
    ]  # fmt: skip
    signal = {lead: 9.0, shares: 6.0, later: 6.0}
    monkeypatch.setattr(feedback, "lead_words_bm25",
                        lambda *args: [signal.get(pk, 0.0) for pk, _, _ in scored])  # fmt: skip
    out = {pk: (score, parts) for pk, score, parts in feedback.apply_feedback(
        scored, candidates, hybrid=True, semantic_weight=0.5,
    )}  # fmt: skip
    fused = fuse_scores(
        {pk: (c.semantic, c.lexical, signal.get(pk, 0.0)) for pk, c in candidates.items()},
        (0.4, 0.4, 0.2),
    )
    for pk, (_, parts) in out.items():
        assert parts["relevance"] == pytest.approx(fused[pk], abs=1e-6)
        assert parts["feedback"] == signal.get(pk, 0.0)
    # The line sharing the lead's words now ranks above the one that matched the query a
    # little better; the score moves by 0.6 times the relevance's change, by half that
    # for a line begun after the named time.
    assert out[shares][0] > out[none][0]
    assert out[shares][0] == pytest.approx(0.6 * fused[shares], abs=2e-6)
    change = 0.6 * (fused[later] - plain[later])
    assert out[later][0] == pytest.approx(
        0.6 * plain[later] + change * BEGAN_AFTER_FACTOR, abs=2e-6
    )


def test_without_a_line_of_a_conversation_nothing_moves(monkeypatch: pytest.MonkeyPatch) -> None:
    one, other = uuid.uuid4(), uuid.uuid4()
    candidates = {one: _candidate(0.8, 5.0, thread=""), other: _candidate(0.3, 0.0, thread="")}
    scored = [(one, *_hit(1.0)), (other, *_hit(0.0))]

    def unexpected(*args: Any) -> list[float]:
        raise AssertionError("no signal without a lead")

    monkeypatch.setattr(feedback, "lead_words_bm25", unexpected)
    out = feedback.apply_feedback(scored, candidates, hybrid=True, semantic_weight=0.5)
    assert [(pk, score) for pk, score, _ in out] == [(pk, score) for pk, score, _ in scored]
    assert all(parts["feedback"] == 0.0 for _, _, parts in out)


def test_no_line_of_a_conversation_no_feedback(api: APIClient) -> None:
    facts = ("Prefers aisle seats on long flights", "Allergic to penicillin",
             "Drives a blue 2015 Honda Civic", "Flies to Lisbon for work often")  # fmt: skip
    for content in facts:
        assert add(api, content=content, type="fact").status_code == 201
    results = _search(api, "Which seat do I like on flights?")
    assert results and all(hit["parts"]["feedback"] == 0.0 for hit in results)


@pytest.mark.parametrize("mode", ["vector", "lexical"])
def test_a_search_of_one_signal_has_no_feedback(
    tenant: Tenant, conversation: dict[str, str], mode: SearchMode
) -> None:
    outcome = memory_search(tenant=tenant, actor=Actor(user_id="alice"), query=QUESTION,
                            user_id="alice", mode=mode)  # fmt: skip
    assert outcome.hits and all(hit.parts["feedback"] == 0.0 for hit in outcome.hits)
