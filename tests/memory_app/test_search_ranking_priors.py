"""Two ranking steps after fusion, read from the pool's own rows: a memory that occurred
after the question was asked (`as_of`) ranks lower, and the length prior moves a short
line a little below a longer one. Through HTTP with the real model and PostgreSQL, and
each step on its own over hand-made candidates."""

from __future__ import annotations

import math
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from rest_framework.test import APIClient

from memory_app.selectors.search.after_question import (
    AFTER_QUESTION_FACTOR,
    CLOCK_TOLERANCE,
    weigh_after_question,
)
from memory_app.selectors.search.length_prior import LENGTH_WEIGHT, MIN_BYTES, apply_length_prior
from memory_app.selectors.search.pool import Candidate
from tests.memory_app.test_memories_api import MEMORIES, add

ASKED = datetime(2023, 5, 30, 10, 0, tzinfo=UTC)
_OTHERS = (
    "Prefers aisle seats on long flights",
    "Her sister lives in Lisbon and works as an architect",
    "Allergic to penicillin",
    "Drives a blue 2015 Honda Civic",
    "Plays tennis on Thursday evenings",
)


def _search(api: APIClient, query: str, **fields: Any) -> list[dict[str, Any]]:
    response = api.post(
        f"{MEMORIES}/search", {"query": query, "user_id": "alice", **fields}, format="json"
    )
    assert response.status_code == 200, response.content
    return list(response.json()["results"])


def _add(api: APIClient, content: str, occurred_at: datetime | None = None) -> str:
    fields: dict[str, Any] = {"content": content, "type": "episodic"}
    if occurred_at is not None:
        fields["occurred_at"] = occurred_at.isoformat().replace("+00:00", "Z")
    response = add(api, **fields)
    assert response.status_code == 201, response.content
    return str(response.json()["memory"]["id"])


def _by_id(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {hit["memory"]["id"]: hit for hit in results}


def test_a_memory_dated_after_the_question_ranks_below_one_from_before(api: APIClient) -> None:
    later = _add(api, "Cooked lasagna for dinner with Kim", ASKED + timedelta(days=3))
    before = _add(api, "Dinner with Kim at home", ASKED - timedelta(days=3))
    for content in _OTHERS:
        _add(api, content)
    query = "lasagna dinner with Kim"

    # Asked after both: the better match leads.
    after_both = _by_id(_search(api, query, as_of="2023-06-10T10:00:00Z"))
    assert after_both[later]["parts"]["relevance"] > after_both[before]["parts"]["relevance"]
    assert after_both[later]["score"] > after_both[before]["score"]
    assert after_both[later]["parts"]["after_question"] == 0.0

    # Asked between them: the lasagna dinner had not happened yet; halved, still found.
    results = _search(api, query, as_of=ASKED.isoformat().replace("+00:00", "Z"))
    hits = _by_id(results)
    assert [hit["memory"]["id"] for hit in results].index(before) < [
        hit["memory"]["id"] for hit in results
    ].index(later)
    assert hits[later]["parts"]["after_question"] == 1.0
    assert hits[before]["parts"]["after_question"] == 0.0
    unhalved = (
        0.6 * hits[later]["parts"]["relevance"]
        + 0.2 * hits[later]["parts"]["recency"]
        + 0.1 * hits[later]["parts"]["importance"]
        + 0.1 * hits[later]["parts"]["access"]
    )
    expected = unhalved * AFTER_QUESTION_FACTOR + hits[later]["parts"]["length"]
    assert hits[later]["score"] == pytest.approx(expected, abs=1e-5)


def test_a_memory_of_the_question_s_own_day_is_not_after_it(api: APIClient) -> None:
    same_day = _add(api, "Cooked lasagna for dinner with Kim", ASKED + timedelta(hours=11))
    undated = _add(api, "Kim orders spinach lasagna at every restaurant")
    hits = _by_id(_search(api, "lasagna dinner Kim", as_of="2023-05-30T10:00:00Z"))
    assert hits[same_day]["parts"]["after_question"] == 0.0
    assert hits[undated]["parts"]["after_question"] == 0.0


def _candidate(occurred_at: datetime | None = None, size: int = 100) -> Candidate:
    return Candidate(0.5, 1.0, ASKED, 0.5, 0, occurred_at, size)


def test_after_question_boundary_is_the_clock_tolerance() -> None:
    ids = [uuid.uuid4() for _ in range(4)]
    candidates = {
        ids[0]: _candidate(ASKED + CLOCK_TOLERANCE),
        ids[1]: _candidate(ASKED + CLOCK_TOLERANCE + timedelta(seconds=1)),
        ids[2]: _candidate(None),
        ids[3]: _candidate(ASKED - timedelta(days=400)),
    }
    scored = [(pk, 0.8, {"relevance": 1.0}) for pk in ids]
    out = {
        pk: (score, parts) for pk, score, parts in weigh_after_question(scored, candidates, ASKED)
    }
    assert [out[pk][1]["after_question"] for pk in ids] == [0.0, 1.0, 0.0, 0.0]
    assert [out[pk][0] for pk in ids] == [0.8, 0.8 * AFTER_QUESTION_FACTOR, 0.8, 0.8]
    # A caller that does not say when the question is asked keeps every score.
    untouched = weigh_after_question(scored, candidates, None)
    assert [(score, parts["after_question"]) for _, score, parts in untouched] == [(0.8, 0.0)] * 4


def test_a_question_asked_now_keeps_a_plan_dated_later_first(api: APIClient) -> None:
    # Asked at the present (the default as_of), a memory dated next week is a plan the
    # agent stored with its date: it is not weighed down below last year's flight.
    now = datetime.now(UTC)
    plan = _add(api, "Flight to Lisbon, seat 14C", now + timedelta(days=7))
    past = _add(api, "Flight to Lisbon last year", now - timedelta(days=365))
    hits = _by_id(_search(api, "flight to Lisbon seat"))
    assert hits[plan]["parts"]["after_question"] == 0.0
    assert next(iter(hits)) == plan and past in hits
    # Asked as of last month, the plan's date was still to come: it is weighed down.
    month_ago = (now - timedelta(days=30)).isoformat().replace("+00:00", "Z")
    then = _by_id(_search(api, "flight to Lisbon seat", as_of=month_ago))
    assert then[plan]["parts"]["after_question"] == 1.0
    assert then[past]["parts"]["after_question"] == 0.0


def test_length_prior_is_the_log_length_over_the_pool_s_mean() -> None:
    ids = [uuid.uuid4() for _ in range(4)]
    sizes = [0, MIN_BYTES - 5, 400, 4000]
    candidates = {pk: _candidate(size=size) for pk, size in zip(ids, sizes, strict=True)}
    scored = [(pk, 0.5, {}) for pk in ids]
    out = {
        pk: (score, parts["length"]) for pk, score, parts in apply_length_prior(scored, candidates)
    }
    logs = [math.log(max(size, MIN_BYTES)) for size in sizes]
    mean = sum(logs) / len(logs)
    for pk, log in zip(ids, logs, strict=True):
        assert out[pk][1] == pytest.approx(LENGTH_WEIGHT * (log - mean), abs=1e-6)
        assert out[pk][0] == pytest.approx(0.5 + LENGTH_WEIGHT * (log - mean), abs=1e-6)
    # Below the floor every length counts alike; the terms are centred on the pool.
    assert out[ids[0]] == out[ids[1]]
    assert sum(term for _, term in out.values()) == pytest.approx(0.0, abs=1e-6)
    assert out[ids[3]][0] > out[ids[2]][0] > out[ids[1]][0]


def test_the_pool_brings_each_memory_s_length(api: APIClient) -> None:
    short = _add(api, "Yes, the lasagna was great!")
    long = _add(
        api,
        "We cooked a big lasagna for Kim's birthday dinner on Saturday, with spinach, "
        "ricotta and a slow tomato sauce that took most of the afternoon to get right.",
    )
    for content in _OTHERS:
        _add(api, content)
    hits = _by_id(_search(api, "lasagna"))
    assert hits[short]["parts"]["length"] < 0 < hits[long]["parts"]["length"]
    ratio = math.log(
        len("We cooked a big lasagna for Kim's birthday dinner on Saturday, with spinach, "
            "ricotta and a slow tomato sauce that took most of the afternoon to get right.")
        / len("Yes, the lasagna was great!")
    )  # fmt: skip
    difference = hits[long]["parts"]["length"] - hits[short]["parts"]["length"]
    assert difference == pytest.approx(LENGTH_WEIGHT * ratio, abs=1e-5)
