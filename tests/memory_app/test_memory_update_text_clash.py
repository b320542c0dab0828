"""PATCH /memories/{id} with a new `content`, through HTTP: one text is current once per
user, agent and type, so another current memory's text is a 409 on `content` (also when
a concurrent write slips past the service's check and the unique constraint refuses it);
a superseded memory's text is history, and the edit takes it, superseding nothing."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from memory_app.services import memory_versions
from tests.memory_app.test_latest_fact import get
from tests.memory_app.test_memories_api import MEMORIES, add
from tests.memory_app.test_memory_types_metadata_relations import AS, created

pytestmark = pytest.mark.django_db

AISLE = "I prefer aisle seats"
NOT_AISLE = "I do not prefer aisle seats"
DUPLICATE = {
    "error": {
        "code": "conflict",
        "message": "Another memory of this user already says exactly this.",
        "fields": {"content": ["Duplicate of another memory."]},
    }
}


def patch(api: APIClient, memory_id: str, content: str) -> Any:
    return api.patch(f"{MEMORIES}/{memory_id}{AS}", {"content": content}, format="json")


def test_a_patch_takes_the_text_of_a_superseded_memory(api: APIClient) -> None:
    aisle = created(add(api, content=AISLE))
    negation = created(add(api, content=NOT_AISLE))
    aisle = get(api, aisle["id"])
    assert aisle["superseded_by"] == negation["id"]
    jazz = created(add(api, content="I like jazz"))

    patched = patch(api, jazz["id"], AISLE)
    assert patched.status_code == 200, patched.content
    assert patched.json()["content"] == AISLE and patched.json()["version"] == 2
    now = get(api, jazz["id"])
    assert now["content"] == AISLE and now["superseded_by"] is None
    # An edit corrects one memory; the chains stay as they were.
    assert get(api, aisle["id"]) == aisle
    assert get(api, negation["id"])["superseded_by"] is None
    # The text is now current: a second memory may not take it.
    coffee = created(add(api, content="I drink my coffee black"))
    assert patch(api, coffee["id"], AISLE).json() == DUPLICATE


def test_a_patch_to_a_current_memorys_text_is_a_conflict_on_content(
    api: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    window = created(add(api, content="I prefer window seats"))
    jazz = created(add(api, content="I like jazz"))
    refused = patch(api, jazz["id"], window["content"])
    assert refused.status_code == 409 and refused.json() == DUPLICATE
    # A concurrent write that gave the text after the check read: the unique constraint
    # refuses it, answered the same way.
    monkeypatch.setattr(memory_versions, "current_twin", lambda memory: None)
    raced = patch(api, jazz["id"], window["content"])
    assert raced.status_code == 409 and raced.json() == DUPLICATE
    assert get(api, jazz["id"])["content"] == "I like jazz"
    assert get(api, jazz["id"])["version"] == 1
