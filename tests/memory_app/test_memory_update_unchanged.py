"""A PATCH that restates what a memory already says, through HTTP: answered with the
memory as it is, no new version, nothing added to its history."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

MEMORIES = "/api/v1/memories"


def test_a_patch_that_changes_nothing_makes_no_version(api: APIClient) -> None:
    body = {"user_id": "alice", "type": "fact", "content": "I live in Lisbon", "tags": ["home"]}
    memory = api.post(MEMORIES, body, format="json").json()["memory"]
    url = f"{MEMORIES}/{memory['id']}?acting_user_id=alice"
    changed = api.patch(url, {"importance": 0.9}, format="json")
    assert changed.status_code == 200 and changed.json()["version"] == 2, changed.content
    for same in (
        {"importance": 0.9},
        {"content": "  I live in Lisbon ", "tags": ["home", "home"]},
        {"scope": "private", "allowed_users": []},
    ):
        again = api.patch(url, same, format="json")
        assert again.status_code == 200, again.content
        assert again.json() == changed.json()
    history = api.get(f"{MEMORIES}/{memory['id']}/history?acting_user_id=alice").json()
    assert [v["version"] for v in history["versions"]] == [1, 2]
    relations = api.get(f"{MEMORIES}/{memory['id']}/relations?acting_user_id=alice").json()
    assert len(relations["relations"]) == 1  # the one `supersedes` edge of version 1
    # A restatement alongside a real change makes one version with the real change.
    mixed = api.patch(url, {"importance": 0.9, "confidence": 0.5}, format="json")
    assert mixed.json()["version"] == 3 and mixed.json()["confidence"] == 0.5
