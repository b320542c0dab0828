"""Validity intervals over HTTP: set on POST and PATCH, shown in every memory body,
checked (400 JSON naming the field), and searched with `valid_at`."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.memory_app.test_memories_api import MEMORIES, add, assert_error, search
from tests.memory_app.test_memory_types_metadata_relations import AS, created

pytestmark = pytest.mark.django_db

YEAR_2024 = "2024-01-01T00:00:00Z"
YEAR_2025 = "2025-01-01T00:00:00Z"


def test_post_sets_and_shows_the_interval(api: APIClient) -> None:
    memory = created(
        add(
            api,
            content="Gold member of the loyalty programme",
            type="fact",
            valid_from="2024-01-01T00:00:00Z",
            valid_to="2025-01-01T00:00:00Z",
        )
    )
    assert memory["valid_from"] == "2024-01-01T00:00:00Z"
    assert memory["valid_to"] == "2025-01-01T00:00:00Z"
    assert memory["superseded_by"] is None
    listed = api.get(MEMORIES, {"user_id": "alice"}).json()["results"]
    assert listed[0]["valid_to"] == "2025-01-01T00:00:00Z"
    open_ended = created(add(api, content="Speaks Portuguese", type="fact"))
    assert open_ended["valid_from"] is None and open_ended["valid_to"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"valid_from": "2025-01-01T00:00:00Z", "valid_to": "2024-01-01T00:00:00Z"}, "valid_to"),
        ({"valid_from": "2025-01-01T00:00:00Z", "valid_to": "2025-01-01T00:00:00Z"}, "valid_to"),
        ({"valid_from": "last spring"}, "valid_from"),
        ({"valid_to": "2025-13-45"}, "valid_to"),
        ({"valid_to": 20250101}, "valid_to"),
    ],
)
def test_post_refuses_a_bad_interval(api: APIClient, body: dict[str, object], field: str) -> None:
    response = add(api, content="Gold member of the loyalty programme", type="fact", **body)
    assert_error(response, 400, "invalid", field)
    assert api.get(MEMORIES, {"user_id": "alice"}).json()["results"] == []


def test_patch_sets_the_interval_without_a_new_version(api: APIClient) -> None:
    memory = created(
        add(api, content="Gold member", type="fact", valid_from="2024-01-01T00:00:00Z")
    )
    url = f"{MEMORIES}/{memory['id']}{AS}"
    patched = api.patch(url, {"valid_to": "2024-06-30T00:00:00+02:00"}, format="json")
    assert patched.status_code == 200, patched.content
    assert patched.json()["valid_to"] == "2024-06-29T22:00:00Z"
    assert patched.json()["version"] == 1  # the text did not change
    # Against the stored start: an end before it is refused, naming valid_to.
    assert_error(
        api.patch(url, {"valid_to": "2023-01-01T00:00:00Z"}, format="json"), 400, "invalid",
        "valid_to",
    )  # fmt: skip
    # And a start after the stored end, too.
    assert_error(
        api.patch(url, {"valid_from": "2024-07-01T00:00:00Z"}, format="json"), 400, "invalid",
        "valid_to",
    )  # fmt: skip
    assert_error(api.patch(url, {"valid_from": "soon"}, format="json"), 400, "invalid",
                 "valid_from")  # fmt: skip
    # Reopened: null clears an end; with a text change, one new version carries both.
    both = api.patch(url, {"valid_to": None, "content": "Gold member since 2024"}, format="json")
    assert both.status_code == 200, both.content
    assert both.json()["valid_to"] is None and both.json()["version"] == 2
    assert api.get(url).json()["valid_from"] == "2024-01-01T00:00:00Z"


def test_valid_at_search_and_its_bad_value(api: APIClient) -> None:
    def member(content: str, **interval: str) -> dict[str, Any]:
        return created(add(api, content=content, type="fact", **interval))

    gold = member("Gold member of the loyalty programme", valid_from=YEAR_2024, valid_to=YEAR_2025)
    silver = member("Silver member of the loyalty programme", valid_from=YEAR_2025)
    early = member("Joined the loyalty programme", valid_to=YEAR_2024)

    def found(at: str) -> set[str]:
        hits = search(api, "loyalty programme member", user_id="alice", valid_at=at)
        return {hit["memory"]["id"] for hit in hits}

    assert found("2023-06-01T00:00:00Z") == {early["id"]}
    assert found("2024-06-01T00:00:00Z") == {gold["id"]}
    assert found("2025-01-01T00:00:00Z") == {silver["id"]}  # ends exclusive, starts inclusive
    everything = search(api, "loyalty programme member", user_id="alice")
    assert len(everything) == 3

    # A question about now: the expired ones are down-weighted, still returned.
    for content in ("I have a cat named Biscuit", "I prefer trains to planes"):
        created(add(api, content=content, type="fact"))
    now = search(api, "what is my loyalty programme status at the moment?", user_id="alice")
    assert now[0]["memory"]["id"] == silver["id"], [hit["memory"]["content"] for hit in now]
    parts = {hit["memory"]["id"]: hit["parts"]["superseded"] for hit in now}
    assert {pk: parts[pk] for pk in (silver["id"], gold["id"], early["id"])} == {
        silver["id"]: 0.0,
        gold["id"]: 1.0,
        early["id"]: 1.0,
    }

    bad = api.post(f"{MEMORIES}/search", {"query": "loyalty", "valid_at": "the other day"},
                   format="json")  # fmt: skip
    assert_error(bad, 400, "invalid", "valid_at")
