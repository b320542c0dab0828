"""The 404 of a memory read without an acting user hints at `acting_user_id`, with the
same message whether the memory exists, is private, is another tenant's or not, so it
discloses nothing; with an acting user who may not see it, the plain 404."""

from __future__ import annotations

import uuid

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

MEMORIES = "/api/v1/memories"
HINT = "Not found. A user's private memory is visible with acting_user_id."


def test_a_read_without_acting_user_hints_at_it_and_discloses_nothing(
    api: APIClient, other_api: APIClient
) -> None:
    body = {"user_id": "alice", "type": "fact", "content": "My bank PIN hint is the cat's name"}
    private = api.post(MEMORIES, body, format="json").json()["memory"]["id"]
    assert api.get(f"{MEMORIES}/{private}?acting_user_id=alice").status_code == 200
    answers = [
        api.get(f"{MEMORIES}/{private}"),  # exists, private to alice
        api.get(f"{MEMORIES}/{uuid.uuid4()}"),  # does not exist
        other_api.get(f"{MEMORIES}/{private}"),  # another tenant's
        api.get(f"{MEMORIES}/{private}/history"),
    ]
    for answer in answers:
        assert answer.status_code == 404
        assert answer.json()["error"] == {"code": "not_found", "message": HINT, "fields": {}}
    # With an acting user who may not see it: the plain 404, as for a missing memory.
    for memory_id in (private, uuid.uuid4()):
        plain = api.get(f"{MEMORIES}/{memory_id}?acting_user_id=bob")
        assert plain.status_code == 404 and plain.json()["error"]["message"] == "Not found."
