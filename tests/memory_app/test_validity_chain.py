"""A subject's memories form one chain in valid time, through HTTP: a fact told late goes
where its `valid_from` puts it, deleting a link relinks the chain around it, and a
"before X" question is dated by when X began."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.memory_app.test_latest_fact import background, get, ids
from tests.memory_app.test_memories_api import MEMORIES, add, search
from tests.memory_app.test_memory_types_metadata_relations import AS, created

pytestmark = pytest.mark.django_db

Y2018 = "2018-01-01T00:00:00Z"
Y2020 = "2020-01-01T00:00:00Z"
Y2021 = "2021-06-01T00:00:00Z"
OSLO_DAY = "2023-06-01T00:00:00Z"


def fact(api: APIClient, content: str, valid_from: str) -> str:
    return str(created(add(api, content=content, type="fact", valid_from=valid_from))["id"])


def homes_at(api: APIClient, instant: str, homes: dict[str, str]) -> list[str]:
    """The names of the homes a `valid_at` search at `instant` finds."""
    found = ids(search(api, "where do I live?", user_id="alice", valid_at=instant))
    return sorted(name for name, memory_id in homes.items() if memory_id in found)


def interval(api: APIClient, memory_id: str) -> tuple[Any, Any, Any]:
    memory = get(api, memory_id)
    return memory["valid_from"], memory["valid_to"], memory["superseded_by"]


def rome_then_oslo(api: APIClient) -> dict[str, str]:
    background(api)
    rome = fact(api, "I live in Rome", Y2020)
    return {"rome": rome, "oslo": fact(api, "I live in Oslo", OSLO_DAY)}


def test_a_fact_told_late_that_began_first_ends_where_the_next_begins(api: APIClient) -> None:
    homes = rome_then_oslo(api)
    homes["lisbon"] = fact(api, "I moved to Lisbon", Y2018)
    assert interval(api, homes["lisbon"]) == (Y2018, Y2020, homes["rome"])
    assert interval(api, homes["rome"]) == (Y2020, OSLO_DAY, homes["oslo"])
    assert interval(api, homes["oslo"]) == (OSLO_DAY, None, None)
    assert homes_at(api, "2019-01-01T00:00:00Z", homes) == ["lisbon"]
    assert homes_at(api, "2021-01-01T00:00:00Z", homes) == ["rome"]
    assert homes_at(api, "2024-01-01T00:00:00Z", homes) == ["oslo"]
    assert homes_at(api, "2017-01-01T00:00:00Z", homes) == []


def test_a_fact_told_late_between_two_cuts_the_one_before(api: APIClient) -> None:
    homes = rome_then_oslo(api)
    homes["paris"] = fact(api, "I moved to Paris", Y2021)
    assert interval(api, homes["rome"]) == (Y2020, Y2021, homes["paris"])
    assert interval(api, homes["paris"]) == (Y2021, OSLO_DAY, homes["oslo"])
    assert interval(api, homes["oslo"]) == (OSLO_DAY, None, None)
    assert homes_at(api, "2020-06-01T00:00:00Z", homes) == ["rome"]
    assert homes_at(api, "2022-01-01T00:00:00Z", homes) == ["paris"]
    assert homes_at(api, "2024-01-01T00:00:00Z", homes) == ["oslo"]


def test_deleting_a_link_in_the_middle_relinks_the_chain(api: APIClient) -> None:
    background(api)
    homes = {"rome": fact(api, "I live in Rome", Y2020)}
    paris = fact(api, "I moved to Paris", Y2021)
    homes["oslo"] = fact(api, "I live in Oslo", OSLO_DAY)
    assert get(api, homes["rome"])["superseded_by"] == paris
    assert api.delete(f"{MEMORIES}/{paris}{AS}").status_code == 204
    assert interval(api, homes["rome"]) == (Y2020, OSLO_DAY, homes["oslo"])
    assert homes_at(api, "2022-01-01T00:00:00Z", homes) == ["rome"]
    assert homes_at(api, "2024-01-01T00:00:00Z", homes) == ["oslo"]
    # The current one goes too: the relinked older is current again.
    assert api.delete(f"{MEMORIES}/{homes['oslo']}{AS}").status_code == 204
    assert interval(api, homes["rome"]) == (Y2020, None, None)
    # Erasing the user takes the rest of the chain.
    assert api.delete("/api/v1/users/alice").status_code == 200
    assert api.get(MEMORIES, {"user_id": "alice"}).json()["results"] == []


def test_deleting_the_current_one_reopens_the_older_whatever_its_start(
    api: APIClient,
) -> None:
    background(api)
    berlin = created(add(api, content="I live in Berlin", type="fact"))["id"]
    munich = created(add(api, content="I moved to Munich", type="fact"))["id"]
    # The move's start is corrected afterwards: the older's end no longer equals it.
    moved = {"valid_from": "2023-01-01T00:00:00Z"}
    assert api.patch(f"{MEMORIES}/{munich}{AS}", moved, format="json").status_code == 200
    assert get(api, berlin)["valid_to"] not in (None, "2023-01-01T00:00:00Z")

    assert api.delete(f"{MEMORIES}/{munich}{AS}").status_code == 204
    assert get(api, berlin)["superseded_by"] is None and get(api, berlin)["valid_to"] is None
    results = search(api, "where do I live now?", user_id="alice")
    assert ids(results)[0] == berlin and results[0]["parts"]["superseded"] == 0.0
    assert berlin in ids(search(api, "where do I live?", user_id="alice",
                                valid_at="2099-01-01T00:00:00Z"))  # fmt: skip


def test_before_a_move_is_dated_by_when_the_move_began(api: APIClient) -> None:
    rome_then_oslo(api)
    response = api.post(
        f"{MEMORIES}/search",
        {"query": "where did I live before I moved to Oslo", "user_id": "alice",
         "as_of": "2030-01-01T00:00:00Z"},
        format="json",
    )  # fmt: skip
    assert response.status_code == 200, response.content
    scope = response.json()["time_scope"]
    assert (scope["kind"], scope["start"], scope["end"]) == ("before", None, OSLO_DAY)


def supersedes_edges(api: APIClient, memory_id: str) -> list[tuple[str, str]]:
    """The memory's outgoing `supersedes` edges between memories, as (target, reason)."""
    response = api.get(f"{MEMORIES}/{memory_id}/relations{AS}")
    assert response.status_code == 200, response.content
    return [
        (row["target_id"], row["reason"])
        for row in response.json()["relations"]
        if row["type"] == "supersedes" and row["source_id"] == memory_id
    ]


def test_a_fact_told_late_between_two_takes_the_edges_of_its_place(api: APIClient) -> None:
    homes = rome_then_oslo(api)
    assert supersedes_edges(api, homes["oslo"]) == [(homes["rome"], "contradicted")]
    paris = fact(api, "I moved to Paris", Y2021)
    assert supersedes_edges(api, homes["oslo"]) == [(paris, "contradicted")]
    assert supersedes_edges(api, paris) == [(homes["rome"], "contradicted")]
    assert get(api, homes["oslo"])["relations"] == [{"type": "supersedes", "target_id": paris}]


def test_deleting_a_link_in_the_middle_joins_its_neighbours_by_an_edge(api: APIClient) -> None:
    background(api)
    rome = fact(api, "I live in Rome", Y2020)
    paris = fact(api, "I moved to Paris", Y2021)
    oslo = fact(api, "I live in Oslo", OSLO_DAY)
    assert supersedes_edges(api, oslo) == [(paris, "contradicted")]
    assert api.delete(f"{MEMORIES}/{paris}{AS}").status_code == 204
    assert supersedes_edges(api, oslo) == [(rome, "contradicted")]
    # The deleted one's edges went with it: Rome's only edge is Oslo's.
    rome_edges = api.get(f"{MEMORIES}/{rome}/relations{AS}").json()["relations"]
    assert [(row["source_id"], row["direction"]) for row in rome_edges] == [(oslo, "incoming")]
