"""A query's time phrase dates a memory by when what it tells began, through HTTP:
`valid_from`, else `occurred_at`, else when it was written. Facts written today about
years past are of their years, and one begun after the time named ranks below what held
then; a memory with only `occurred_at` is of that date."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.memory_app.test_latest_fact import background
from tests.memory_app.test_memories_api import MEMORIES, add

pytestmark = pytest.mark.django_db

ASKED = "2026-11-29T12:00:00Z"


def _added(api: APIClient, content: str, **fields: Any) -> str:
    response = add(api, content=content, type="fact", **fields)
    assert response.status_code == 201, response.content
    return str(response.json()["memory"]["id"])


def _search(api: APIClient, query: str, **fields: Any) -> dict[str, Any]:
    body = {"query": query, "user_id": "alice", **fields}
    response = api.post(f"{MEMORIES}/search", body, format="json")
    assert response.status_code == 200, response.content
    return dict(response.json())


def _by_id(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {hit["memory"]["id"]: hit for hit in body["results"]}


def test_where_i_lived_before_a_move_ranks_the_home_before_it_above_the_move(
    api: APIClient,
) -> None:
    """Three homes written today with their valid_from: "before I moved to Oslo" ends
    where the move began (2023); the homes that began before it are of that time, and
    the move, begun at its end, ranks below them however well its words match."""
    background(api)
    homes = {
        "lisbon": _added(api, "I live in Lisbon", valid_from="2018-01-01T00:00:00Z"),
        "rome": _added(api, "I live in Rome", valid_from="2020-01-01T00:00:00Z"),
        "oslo": _added(api, "I moved to Oslo", valid_from="2023-06-01T00:00:00Z"),
    }

    body = _search(api, "where did I live before I moved to Oslo")

    scope = body["time_scope"]
    assert (scope["kind"], scope["start"], scope["end"]) == ("before", None, "2023-06-01T00:00:00Z")
    ranked = [hit["memory"]["id"] for hit in body["results"]]
    assert ranked.index(homes["rome"]) < ranked.index(homes["oslo"]), body["results"]
    assert homes["lisbon"] in ranked
    parts = [_by_id(body)[homes[name]]["parts"] for name in ("lisbon", "rome", "oslo")]
    assert [(p["time"], p["began_after"]) for p in parts] == [(1.0, 0.0), (1.0, 0.0), (0.0, 1.0)]


def _classes(api: APIClient) -> dict[str, str]:
    """Two classes started in different years, each told at another time than it began,
    and a memory with only `occurred_at` of each side of May 2021."""
    background(api)
    return {
        # Began in May 2021, told the next March.
        "pottery": _added(api, "I started a pottery class on Wednesdays",
                          valid_from="2021-05-10T00:00:00Z", occurred_at="2022-03-01T18:00:00Z"),
        # Told in May 2021, began in 2019.
        "yoga": _added(api, "I started a yoga class on Mondays",
                       valid_from="2019-01-07T00:00:00Z", occurred_at="2021-05-20T18:00:00Z"),
        "festival": _added(api, "Went to the Porto jazz festival with Ana",
                           occurred_at="2021-05-15T20:00:00Z"),
        "concert": _added(api, "Went to a piano concert in Porto with Ana",
                          occurred_at="2021-06-03T00:00:00Z"),
    }  # fmt: skip


def test_a_time_phrase_follows_valid_from_over_occurred_at(api: APIClient) -> None:
    memories = _classes(api)

    body = _search(api, "which class did I start in May 2021?", as_of=ASKED)

    hits = _by_id(body)
    assert hits[memories["pottery"]]["parts"]["time"] == 1.0
    assert hits[memories["yoga"]]["parts"]["time"] == 0.0
    assert body["results"][0]["memory"]["id"] == memories["pottery"]


def test_a_question_about_a_time_alone_finds_what_began_then_first(api: APIClient) -> None:
    """The time-only search reads the memories of the named time first: by when what
    they tell began, so the class begun in May 2021 and told in 2022 is among them, and
    the class told in May 2021 but begun in 2019 is not."""
    memories = _classes(api)

    body = _search(api, "what happened in May 2021?", as_of=ASKED)

    ranked = [hit["memory"]["id"] for hit in body["results"]]
    assert set(ranked[:3]) == {memories["pottery"], memories["festival"], memories["concert"]}
    assert ranked.index(memories["yoga"]) >= 3


def test_a_memory_with_only_occurred_at_keeps_its_time_credit(api: APIClient) -> None:
    """Dated by `occurred_at` alone, a memory scores as it does by that date: 1 inside the
    interval, falling after its end over the interval's length (May: 31 days); a memory
    with no date of its own is of when it was written (today, outside). Beside them, the
    class begun in May 2021 is of May too."""
    memories = _classes(api)
    undated = _added(api, "Went to the Porto book fair with Ana")

    body = _search(api, "what did I do with Ana in Porto in May 2021?", as_of=ASKED)

    times = {pk: hit["parts"]["time"] for pk, hit in _by_id(body).items()}
    assert times[memories["festival"]] == 1.0
    assert times[memories["concert"]] == pytest.approx(1 - 2 / 31, abs=1e-6)
    assert times[undated] == 0.0
    assert times[memories["pottery"]] == 1.0
    ranked = [hit["memory"]["id"] for hit in body["results"]]
    assert ranked[:2] == [memories["festival"], memories["concert"]]


def _homes(api: APIClient, *, others: bool = True) -> dict[str, str]:
    """Three homes told today, each with when it began: a chain Lisbon -> Rome -> Oslo;
    with `others`, the user's other facts beside them."""
    if others:
        background(api)
    return {
        city.lower(): _added(api, f"I live in {city}", valid_from=f"{year}-03-01T00:00:00Z")
        for city, year in (("Lisbon", 2018), ("Rome", 2020), ("Oslo", 2023))
    }


@pytest.mark.parametrize("others", [True, False], ids=["among-other-facts", "homes-alone"])
def test_before_a_move_the_home_that_held_just_before_it_ranks_first(
    api: APIClient, others: bool
) -> None:
    """The move's own memory matches the question's words best (alone, the pool's
    relevance is 1 for it and 0 for Rome), and the first home as well as the second
    began before the move; the state the question asks about is the one at the instant
    before it, which only Rome held."""
    homes = _homes(api, others=others)

    body = _search(api, "where did I live before I moved to Oslo?")

    ranked = [hit["memory"]["id"] for hit in body["results"]]
    assert ranked[0] == homes["rome"], body["results"]
    parts = {name: _by_id(body)[homes[name]]["parts"] for name in homes}
    assert [parts[name]["superseded"] for name in ("lisbon", "rome", "oslo")] == [1.0, 0.0, 1.0]
    # The move began at the named end: halved once, as begun after it, then kept below.
    assert parts["oslo"]["began_after"] == 1.0


def test_a_named_year_asks_about_the_state_that_held_in_it(api: APIClient) -> None:
    homes = _homes(api, others=False)

    body = _search(api, "where did I live in 2021?")

    assert body["results"][0]["memory"]["id"] == homes["rome"], body["results"]
    parts = _by_id(body)
    assert parts[homes["lisbon"]]["parts"]["superseded"] == 1.0  # ended in 2020
    assert parts[homes["rome"]]["parts"]["superseded"] == 0.0


def test_a_home_that_ended_within_the_named_year_held_in_it(api: APIClient) -> None:
    homes = _homes(api)

    body = _search(api, "where did I live in 2020?")

    parts = {name: _by_id(body)[homes[name]]["parts"] for name in homes}
    assert parts["lisbon"]["superseded"] == 0.0  # until March 2020
    assert parts["rome"]["superseded"] == 0.0  # from March 2020
    assert (parts["oslo"]["began_after"], parts["oslo"]["superseded"]) == (1.0, 1.0)
