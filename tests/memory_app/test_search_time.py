"""Time in memory search, through HTTP: the query's time phrase, read against `as_of`,
boosts the memories that occurred in it; memories without a time stay findable; a bad
`as_of` answers 400 naming the field; an event the query orders by is dated by a
lexical lookup of its words."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from tests.memory_app.test_memories_api import MEMORIES, add, assert_error

pytestmark = pytest.mark.django_db

# Saturday 20 May and Saturday 27 May 2023; asked on Tuesday 30 May ("last Saturday" =
# 27 May) or on Tuesday 23 May ("last Saturday" = 20 May).
ON_27_MAY = "2023-05-27T19:30:00Z"
ON_20_MAY = "2023-05-20T19:30:00Z"


def _search(api: APIClient, query: str, **fields: Any) -> dict[str, Any]:
    response = api.post(
        f"{MEMORIES}/search", {"query": query, "user_id": "alice", **fields}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()


# Other memories of the user, so that the two dinners are near the top of a pool as a
# real search has one: relevance is scaled over the pool.
_OTHERS = (
    "Prefers aisle seats on long flights",
    "Her sister lives in Lisbon and works as an architect",
    "Allergic to penicillin",
    "Drives a blue 2015 Honda Civic",
    "Plays tennis on Thursday evenings",
    "Wants a standing desk for the home office",
)


def _add_dinners(api: APIClient) -> dict[str, str]:
    ids = {}
    for name, content, kind, occurred_at in (
        ("kim", "Cooked lasagna for dinner with Kim", "episodic", ON_27_MAY),
        ("sam", "Cooked lasagna for dinner with Sam", "fact", ON_20_MAY),
        ("plain", "Favourite dinner to cook: lasagna with spinach", "preference", None),
    ):
        response = add(api, content=content, type=kind, occurred_at=occurred_at)
        assert response.status_code == 201, response.content
        assert response.json()["action"] == "created"
        ids[name] = response.json()["memory"]["id"]
    for content in _OTHERS:
        assert add(api, content=content, type="fact").status_code == 201
    return ids


def _ranked(body: dict[str, Any]) -> list[str]:
    return [hit["memory"]["id"] for hit in body["results"]]


def test_a_memory_in_the_phrase_s_interval_ranks_first(api: APIClient) -> None:
    ids = _add_dinners(api)
    query = "what lasagna dinner did I cook last Saturday?"

    late = _search(api, query, as_of="2023-05-30T10:00:00Z")
    assert _ranked(late)[0] == ids["kim"]
    assert late["time_scope"] == {
        "phrase": "last Saturday",
        "kind": "named_weekday",
        "start": "2023-05-27T00:00:00Z",
        "end": "2023-05-28T00:00:00Z",
        "anchor": None,
    }
    times = {hit["memory"]["id"]: hit["parts"]["time"] for hit in late["results"]}
    assert [times[ids[name]] for name in ("kim", "sam", "plain")] == [1.0, 0.0, 0.0]
    assert sum(times.values()) == 1.0

    # Asked a week earlier, "last Saturday" is the 20th: the other dinner leads.
    early = _search(api, query, as_of="2023-05-23T10:00:00Z")
    assert _ranked(early)[0] == ids["sam"]
    assert early["time_scope"]["start"] == "2023-05-20T00:00:00Z"
    # A boost, not a filter: the memory without occurred_at is still found.
    assert ids["plain"] in _ranked(early)


def test_the_boost_is_the_documented_weight(api: APIClient) -> None:
    ids = _add_dinners(api)
    plain = _search(api, "lasagna dinner", as_of="2023-05-30T10:00:00Z")
    timed = _search(api, "lasagna dinner two days ago", as_of="2023-05-30T10:00:00Z")
    assert plain["time_scope"] is None
    assert all(hit["parts"]["time"] == 0.0 for hit in plain["results"])
    kim = next(hit for hit in timed["results"] if hit["memory"]["id"] == ids["kim"])
    assert timed["time_scope"]["kind"] == "ago"
    assert kim["parts"]["time"] == 1.0
    base = (
        0.6 * kim["parts"]["relevance"]
        + 0.2 * kim["parts"]["recency"]
        + 0.1 * kim["parts"]["importance"]
        + 0.1 * kim["parts"]["access"]
        + kim["parts"]["length"]
    )
    assert kim["score"] == pytest.approx(base + 0.1, abs=1e-5)


def test_as_of_keeps_its_offset(api: APIClient) -> None:
    _add_dinners(api)
    # 30 May 07:00 in Tokyo is 29 May 22:00 UTC: "yesterday" is Tokyo's 29 May.
    body = _search(api, "dinner yesterday", as_of="2023-05-30T07:00:00+09:00")
    assert body["as_of"] == "2023-05-30T07:00:00+09:00"
    assert (body["time_scope"]["start"], body["time_scope"]["end"]) == (
        "2023-05-29T00:00:00+09:00",
        "2023-05-30T00:00:00+09:00",
    )


def test_as_of_defaults_to_now(api: APIClient) -> None:
    body = _search(api, "what did I eat in May 2023")
    assert body["as_of"].startswith("20")
    assert body["time_scope"]["start"] == "2023-05-01T00:00:00Z"


def test_an_event_no_memory_tells_of_boosts_nothing(api: APIClient) -> None:
    ids = _add_dinners(api)
    body = _search(api, "lasagna before I moved to Denver", as_of="2023-05-30T10:00:00Z")
    assert body["time_scope"]["kind"] == "before_event"
    assert body["time_scope"]["anchor"] == "I moved to Denver"
    assert (body["time_scope"]["start"], body["time_scope"]["end"]) == (None, None)
    assert set(_ranked(body)) >= set(ids.values())
    assert all(hit["parts"]["time"] == 0.0 for hit in body["results"])


@pytest.mark.parametrize(
    "as_of", ["yesterday", "2023-13-01T00:00:00Z", "2023-05-30T25:00:00Z", "", 20230530, None]
)
def test_bad_as_of_answers_400_naming_the_field(api: APIClient, as_of: Any) -> None:
    response = api.post(
        f"{MEMORIES}/search", {"query": "dinner", "user_id": "alice", "as_of": as_of}, format="json"
    )
    assert_error(response, 400, "invalid", "as_of")


@pytest.mark.parametrize(
    "as_of", ["9999-12-31T23:00:00Z", "9999-12-31T23:59:59Z", "9999-12-31T23:59:59-12:00"]
)
def test_as_of_at_the_calendar_s_end_is_no_error(api: APIClient, as_of: str) -> None:
    """Asked at the calendar's end, with memories to rank: nothing may step past it."""
    ids = _add_dinners(api)
    body = _search(api, "dinner next year", as_of=as_of)
    assert body["time_scope"] is None
    assert set(ids.values()) <= set(_ranked(body))
    assert all(hit["parts"]["after_question"] == 0.0 for hit in body["results"])
    assert _search(api, "what do I cook for dinner now?", as_of=as_of)["results"]


def test_a_memory_told_after_the_named_time_keeps_part_of_the_boost(api: APIClient) -> None:
    """What happened on 1 May is told on the 2nd ("I watched it yesterday"): a memory
    after the interval keeps a boost falling to none a week (the interval's length, at
    least a week) after its end."""
    told_next_day = add(
        api,
        content="Watched Lord of the Rings again",
        type="episodic",
        occurred_at="2022-05-02T11:54:00Z",
    ).json()["memory"]["id"]
    told_weeks_later = add(
        api,
        content="Watched Little Women at the cinema",
        type="episodic",
        occurred_at="2022-06-20T18:00:00Z",
    ).json()["memory"]["id"]
    for content in _OTHERS:
        assert add(api, content=content, type="fact").status_code == 201

    body = _search(api, "What movie did I watch on 1 May, 2022?", as_of="2026-11-29T12:00:00Z")

    times = {hit["memory"]["id"]: hit["parts"]["time"] for hit in body["results"]}
    # 11 h 54 min after the day's end, of a week's reach.
    assert times[told_next_day] == pytest.approx(1 - (11 + 54 / 60) / (7 * 24), abs=1e-5)
    assert times[told_weeks_later] == 0.0
    assert _ranked(body)[0] == told_next_day


def test_an_event_a_memory_tells_of_is_dated_by_it(api: APIClient) -> None:
    """ "before I moved": the move is dated by the memory that tells of it, and what
    happened before it is boosted."""
    boston = add(api, content="Rented a small flat near the harbour in Boston", type="episodic",
                 occurred_at="2024-02-01T09:00:00Z").json()["memory"]["id"]  # fmt: skip
    add(api, content="I moved to Denver for the new job", type="episodic",
        occurred_at="2026-04-10T09:00:00Z")  # fmt: skip
    denver = add(api, content="Rented a loft with a view of the mountains", type="episodic",
                 occurred_at="2026-05-01T09:00:00Z").json()["memory"]["id"]  # fmt: skip
    for content in _OTHERS:
        assert add(api, content=content, type="fact").status_code == 201

    body = _search(api, "which flat did I rent before I moved?", as_of="2026-11-29T12:00:00Z")

    assert body["time_scope"] == {
        "phrase": "before I moved",
        "kind": "before",
        "start": None,
        "end": "2026-04-10T09:00:00Z",
        "anchor": "I moved",
    }
    times = {hit["memory"]["id"]: hit["parts"]["time"] for hit in body["results"]}
    assert (times[boston], times[denver]) == (1.0, 0.0)
    # Asked before the move happened, nothing dates it.
    early = _search(api, "which flat did I rent before I moved?", as_of="2025-01-01T00:00:00Z")
    assert early["time_scope"]["kind"] == "before_event"


def test_the_event_is_looked_up_by_its_words_alone(api: APIClient) -> None:
    """The lookup that dates "I moved" reads BM25 alone, no vector step; the question's
    own search is hybrid."""
    add(api, content="I moved to Denver for the new job", type="episodic",
        occurred_at="2026-04-10T09:00:00Z")  # fmt: skip
    for content in _OTHERS:
        assert add(api, content=content, type="fact").status_code == 201

    with CaptureQueriesContext(connection) as captured:
        body = _search(api, "which flat did I rent before I moved?", as_of="2026-11-29T12:00:00Z")

    assert body["time_scope"]["end"] == "2026-04-10T09:00:00Z"
    sent = [query["sql"] for query in captured.captured_queries]
    pools = [text for text in sent if "engram_search_pool_" in text]
    assert ["nearest AS MATERIALIZED" in text for text in pools] == [False, True]
