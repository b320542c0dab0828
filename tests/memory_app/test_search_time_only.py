"""A query that names a time and nothing else ("what happened in March?"), through HTTP:
the memories that occurred in that time come first, though other memories share the
query's words; when fewer than `limit` did, the rest of the ranking follows. And the
search's own `occurred_from` / `occurred_to` filters."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from rest_framework.test import APIClient

from memory_app.timeq.time_only import asks_only_time
from tests.memory_app.test_memories_api import MEMORIES, add, assert_error

pytestmark = pytest.mark.django_db

AS_OF = "2023-09-01T10:00:00Z"  # "in March" is March 2023, "last week" 21-27 August

# What happened in March 2023, and in late August.
_MARCH = (
    ("Ran the Lisbon half marathon in 1:52", "2023-03-12T09:00:00Z"),
    ("Adopted a grey cat named Miso from the shelter", "2023-03-20T17:00:00Z"),
    ("Started a pottery class on Wednesday evenings", "2023-03-28T19:00:00Z"),
)
_LAST_WEEK = ("Booked the flights to Osaka for October", "2023-08-23T12:00:00Z")
# Memories of other times that hold the query's words ("happened", "talked").
_WORDY = (
    ("Told the landlord what happened with the broken boiler", "2023-01-10T08:00:00Z"),
    ("We talked about what happened at the office party", "2023-06-01T21:00:00Z"),
    ("Talked with Sam about what happened in the budget meeting", "2023-07-15T11:00:00Z"),
    ("Asked what happened to the parcel from Berlin", "2023-05-05T14:00:00Z"),
)
_UNDATED = (
    "Prefers aisle seats on long flights",
    "Allergic to penicillin",
    "Drives a blue 2015 Honda Civic",
)


def _seed(api: APIClient) -> dict[str, str]:
    """The memories' ids by content."""
    ids = {}
    for content, occurred_at in (*_MARCH, _LAST_WEEK, *_WORDY):
        response = add(api, content=content, type="episodic", occurred_at=occurred_at)
        assert response.status_code == 201, response.content
        ids[content] = response.json()["memory"]["id"]
    for content in _UNDATED:
        assert add(api, content=content, type="fact").status_code == 201
    return ids


def _search(api: APIClient, query: str, **fields: Any) -> list[dict[str, Any]]:
    body = {"query": query, "user_id": "alice", "as_of": AS_OF, **fields}
    response = api.post(f"{MEMORIES}/search", body, format="json")
    assert response.status_code == 200, response.content
    return list(response.json()["results"])


def _contents(results: list[dict[str, Any]]) -> list[str]:
    return [hit["memory"]["content"] for hit in results]


def test_what_happened_in_a_month_lists_that_month_first(api: APIClient) -> None:
    _seed(api)
    results = _search(api, "What happened in March?", limit=5)
    assert set(_contents(results)[:3]) == {content for content, _ in _MARCH}
    assert all(hit["parts"]["time"] == 1.0 for hit in results[:3])
    # The memories that only share its words come after, if at all.
    assert not set(_contents(results)[:3]) & {content for content, _ in _WORDY}


def test_fewer_in_the_time_than_the_limit_are_followed_by_the_rest(api: APIClient) -> None:
    _seed(api)
    results = _search(api, "what did we talk about last week?", limit=4)
    assert _contents(results)[0] == _LAST_WEEK[0]
    assert results[0]["parts"]["time"] == 1.0
    assert len(results) == 4
    assert len(set(_contents(results))) == 4


def test_what_occurred_in_the_time_comes_before_what_was_said_after_it(
    api: APIClient,
) -> None:
    # "last Tuesday" from Friday 1 September is 29 August. Thursday's lines lie in its
    # told-after reach and match "discuss" better than Tuesday's own lines do.
    tuesday = (
        ("Picked the grey tiles for the bathroom floor", "2023-08-29T18:00:00Z"),
        ("Compared the two quotes for the kitchen worktop", "2023-08-29T18:05:00Z"),
    )
    thursday = (
        ("We discussed the wedding playlist and the seating plan", "2023-08-31T20:00:00Z"),
        ("We discussed what to discuss with the caterer", "2023-08-31T20:05:00Z"),
    )
    for content, occurred_at in (*tuesday, *thursday):
        added = add(api, content=content, type="episodic", occurred_at=occurred_at)
        assert added.status_code == 201
    results = _search(api, "What did we discuss last Tuesday?", limit=4)
    assert set(_contents(results)[:2]) == {content for content, _ in tuesday}
    assert [hit["parts"]["time"] for hit in results[:2]] == [1.0, 1.0]
    assert set(_contents(results)[2:]) == {content for content, _ in thursday}
    # A limit that only the interval's lines fill is not filled by Thursday's first.
    assert set(_contents(_search(api, "What did we discuss last Tuesday?", limit=2))) == {
        content for content, _ in tuesday
    }


def test_a_query_about_a_time_alone_scores_its_results_best_first(api: APIClient) -> None:
    # Thursday's lines match "discuss" and so score higher in the search than Tuesday's
    # own lines, which the time puts first; the scores follow that order.
    for content, occurred_at in (
        ("Picked the grey tiles for the bathroom floor", "2023-08-29T18:00:00Z"),
        ("We discussed the wedding playlist and the seating plan", "2023-08-31T20:00:00Z"),
        ("We discussed what to discuss with the caterer", "2023-08-31T20:05:00Z"),
    ):
        added = add(api, content=content, type="episodic", occurred_at=occurred_at)
        assert added.status_code == 201
    _seed(api)
    results = _search(api, "What did we discuss last Tuesday?", limit=8)
    assert _contents(results)[0] == "Picked the grey tiles for the bathroom floor"
    scores = [hit["score"] for hit in results]
    assert scores == sorted(scores, reverse=True), scores
    assert scores[0] > scores[1]  # the interval's line above the told-after ones


def test_a_query_with_more_than_a_time_keeps_the_boost_ranking(api: APIClient) -> None:
    _seed(api)
    # "boiler" is a word of its own: the January memory answers it, March or not.
    results = _search(api, "what happened with the boiler in March?", limit=3)
    assert _contents(results)[0] == _WORDY[0][0]


def test_without_as_of_nothing_is_read_as_a_time(api: APIClient) -> None:
    _seed(api)
    body = {"query": "What happened in March?", "user_id": "alice", "limit": 3}
    response = api.post(f"{MEMORIES}/search", body, format="json")
    assert response.status_code == 200
    # as_of defaults to now: March is this year's or last, in which nothing happened.
    assert all(hit["parts"]["time"] == 0.0 for hit in response.json()["results"])


def test_occurred_filters_keep_the_memories_that_happened_in_the_window(api: APIClient) -> None:
    _seed(api)
    results = _search(
        api,
        "what happened",
        occurred_from="2023-03-15T00:00:00Z",
        occurred_to="2023-06-01T21:00:00Z",
        limit=20,
    )
    assert set(_contents(results)) == {
        _MARCH[1][0],
        _MARCH[2][0],
        _WORDY[3][0],
    }


@pytest.mark.parametrize(
    ("start", "end"),
    [("2023-05-01T00:00:00Z", "2023-05-01T00:00:00Z"), ("2023-05-02T00:00:00Z", "2023-05-01")],
)
def test_occurred_to_not_after_occurred_from_answers_400(
    api: APIClient, start: str, end: str
) -> None:
    body = {"query": "x", "occurred_from": start, "occurred_to": end}
    response = api.post(f"{MEMORIES}/search", body, format="json")
    assert_error(response, 400, "invalid", "occurred_to")


def test_an_unparsable_occurred_bound_answers_400_naming_it(api: APIClient) -> None:
    response = api.post(
        f"{MEMORIES}/search", {"query": "x", "occurred_from": "last Tuesday"}, format="json"
    )
    assert_error(response, 400, "invalid", "occurred_from")


_AT = datetime(2023, 9, 1, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    "query",
    [
        "What happened in March?",
        "what did we talk about last week?",
        "Anything new since Monday?",
        "What's up for tomorrow",
        "Remind me what I told you two weeks ago",
        "Tell me about yesterday",
        "in May",
    ],
)
def test_queries_that_ask_only_about_a_time(query: str) -> None:
    assert asks_only_time(query, _AT)


@pytest.mark.parametrize(
    "query",
    [
        "what did I eat last week?",
        "What did I buy yesterday",
        "When did I go to Paris?",
        "what happened to order 4411 in May",
        "hello",
        "",
    ],
)
def test_queries_that_ask_more_than_a_time(query: str) -> None:
    assert not asks_only_time(query, _AT)
