"""The user changes their mind back: the exact text of a superseded memory, said again
after what superseded it, is a new current memory that supersedes the chain's current
one; the old memory keeps the interval it held. Said again as of a time before that
change, it is the old statement told again (`duplicate`). Through POST /memories and
through what a conversation's turns extract."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from memory_app.models import Memory
from sessions_app.models import Tenant
from tests.memory_app.test_extraction_changes import say
from tests.memory_app.test_latest_fact import get
from tests.memory_app.test_memories_api import MEMORIES, add
from tests.memory_app.test_memory_types_metadata_relations import AS, created

pytestmark = pytest.mark.django_db

AISLE = "I prefer aisle seats"
NOT_AISLE = "I do not prefer aisle seats"
PORTO_DAY = "2024-03-01T10:00:00Z"
LISBON_DAY = "2025-06-01T10:00:00Z"


def relations(api: APIClient, memory_id: str) -> list[tuple[str, str, str]]:
    response = api.get(f"{MEMORIES}/{memory_id}/relations{AS}")
    assert response.status_code == 200, response.content
    rows = response.json()["relations"]
    return [(row["source_id"], row["type"], row["target_id"]) for row in rows]


def aisle_then_not(api: APIClient) -> tuple[dict[str, Any], dict[str, Any]]:
    aisle = created(add(api, content=AISLE))
    negation = created(add(api, content=NOT_AISLE))
    return get(api, aisle["id"]), get(api, negation["id"])


def test_the_exact_text_said_again_after_its_negation_is_current_again(api: APIClient) -> None:
    aisle, negation = aisle_then_not(api)
    assert aisle["superseded_by"] == negation["id"]

    again = add(api, content=AISLE)
    assert again.status_code == 201, again.content
    assert again.json()["action"] == "created" and again.json()["similarity"] is None
    restated = again.json()["memory"]
    assert restated["id"] not in (aisle["id"], negation["id"])
    assert restated["content"] == AISLE and restated["superseded_by"] is None
    assert restated["valid_to"] is None
    negation_now = get(api, negation["id"])
    assert negation_now["superseded_by"] == restated["id"]
    assert negation_now["valid_to"] == restated["valid_from"]
    assert (restated["id"], "supersedes", negation["id"]) in relations(api, restated["id"])
    # The first statement keeps the interval it held, under the negation.
    assert get(api, aisle["id"]) == aisle

    # Said once more, it is the current memory stated twice.
    twice = add(api, content=AISLE)
    assert twice.status_code == 200, twice.content
    assert twice.json()["action"] == "duplicate"
    assert twice.json()["memory"]["id"] == restated["id"]


def test_the_negation_said_again_after_the_change_back_supersedes_it(api: APIClient) -> None:
    _, negation = aisle_then_not(api)
    restated = created(add(api, content=AISLE))
    negated_again = created(add(api, content=NOT_AISLE))
    assert negated_again["id"] != negation["id"]
    assert get(api, restated["id"])["superseded_by"] == negated_again["id"]
    assert get(api, negation["id"])["superseded_by"] == restated["id"]


def test_a_subject_value_said_again_after_a_move_is_the_current_home(api: APIClient) -> None:
    porto = created(add(api, content="I live in Porto", type="fact", occurred_at=PORTO_DAY))
    lisbon = created(add(api, content="I live in Lisbon", type="fact", occurred_at=LISBON_DAY))
    # Dated when it held, it is the old statement told again: nothing changes.
    told_again = add(api, content="I live in Porto", type="fact", occurred_at=PORTO_DAY)
    assert told_again.status_code == 200, told_again.content
    assert told_again.json()["action"] == "duplicate"
    assert told_again.json()["memory"]["id"] == porto["id"]
    assert get(api, lisbon["id"])["superseded_by"] is None
    # Said now, the user has moved back.
    back = add(api, content="I live in Porto", type="fact")
    assert back.status_code == 201 and back.json()["action"] == "created", back.content
    home = back.json()["memory"]
    assert home["id"] != porto["id"] and home["subject"] == "home"
    assert get(api, lisbon["id"])["superseded_by"] == home["id"]
    porto_now = get(api, porto["id"])
    assert (porto_now["valid_to"], porto_now["superseded_by"]) == (LISBON_DAY, lisbon["id"])


def test_moving_back_said_in_conversation_makes_the_first_home_current(tenant: Tenant) -> None:
    say(tenant, "I live in Porto.", "I live in Lisbon.", "I live in Porto.")
    homes = Memory.objects.filter(tenant=tenant, subject="home").order_by("created_at")
    chain = [(row.content, row.superseded_by_id) for row in homes]
    first, lisbon, back = homes
    assert chain == [
        ("I live in Porto", lisbon.pk),
        ("I live in Lisbon", back.pk),
        ("I live in Porto", None),
    ]
    assert first.valid_to == lisbon.valid_from and lisbon.valid_to == back.valid_from


def test_a_threaded_bulk_restating_the_first_home_makes_it_current(api: APIClient) -> None:
    def bulk(*contents: str) -> list[str]:
        items = [
            {"user_id": "alice", "type": "fact", "content": text, "thread_key": "chat-7"}
            for text in contents
        ]
        response = api.post(f"{MEMORIES}/bulk", items, format="json")
        assert response.status_code == 200, response.content
        return [item["action"] for item in response.json()["results"]]

    assert bulk("I live in Porto", "I live in Lisbon") == ["created", "created"]
    assert bulk("I live in Porto", "I live in Porto") == ["created", "duplicate"]
    homes = Memory.objects.filter(subject="home").order_by("created_at", "thread_order")
    assert [(row.content, row.superseded_by_id) for row in homes] == [
        ("I live in Porto", homes[1].pk),
        ("I live in Lisbon", homes[2].pk),
        ("I live in Porto", None),
    ]


def test_removing_an_edge_that_would_make_one_text_current_twice_is_a_conflict(
    api: APIClient,
) -> None:
    aisle, negation = aisle_then_not(api)
    restated = created(add(api, content=AISLE))
    edge = next(
        row["id"]
        for row in api.get(f"{MEMORIES}/{negation['id']}/relations{AS}").json()["relations"]
        if row["target_id"] == aisle["id"]
    )
    removed = api.delete(f"{MEMORIES}/{negation['id']}/relations/{edge}{AS}")
    assert removed.status_code == 409, removed.content
    error = removed.json()["error"]
    assert error["code"] == "conflict" and restated["id"] in error["message"], error
    # Nothing changed: the edge and the chain stay.
    assert get(api, aisle["id"]) == aisle
    assert (negation["id"], "supersedes", aisle["id"]) in relations(api, negation["id"])
