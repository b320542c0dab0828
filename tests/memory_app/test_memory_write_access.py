"""Who may change a memory, through HTTP: the users and roles a shared memory lists read
it and nothing more; its owner, and the tenant's backend acting for no user, change it."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from memory_app.models import Memory, MemoryRelation

pytestmark = pytest.mark.django_db

MEMORIES = "/api/v1/memories"


def add_shared(api: APIClient) -> dict[str, Any]:
    body = {
        "user_id": "alice",
        "type": "fact",
        "content": "Door code is 4711",
        "scope": "shared",
        "allowed_users": ["bob"],
        "allowed_roles": ["admin"],
    }
    response = api.post(MEMORIES, body, format="json")
    assert response.status_code == 201, response.content
    return dict(response.json()["memory"])


def assert_refused(response: Any) -> None:
    assert response.status_code == 403, response.content
    error = response.json()["error"]
    assert error["code"] == "permission_denied", error
    assert "owner" in error["message"], error


def test_a_shared_memorys_readers_may_read_but_not_change_it(api: APIClient) -> None:
    memory = add_shared(api)
    url = f"{MEMORIES}/{memory['id']}"
    other = api.post(
        MEMORIES, {"user_id": "bob", "type": "fact", "content": "I park on level 3"}, format="json"
    ).json()["memory"]
    for actor in ("acting_user_id=bob", "acting_user_id=carol&acting_roles=admin"):
        assert api.get(f"{url}?{actor}").status_code == 200
        for change in (
            {"scope": "public"},
            {"allowed_users": ["bob", "mallory"]},
            {"importance": 0.1},
        ):
            assert_refused(api.patch(f"{url}?{actor}", change, format="json"))
        assert_refused(api.delete(f"{url}?{actor}"))
        assert_refused(api.post(f"{url}/revert?{actor}", {"version": 1}, format="json"))
        edge = {"type": "related_to", "target_id": other["id"]}
        assert_refused(api.post(f"{url}/relations?{actor}", edge, format="json"))
    stored = Memory.objects.get(pk=memory["id"])
    assert (stored.scope, stored.allowed_users, stored.version) == ("shared", ["bob"], 1)
    assert stored.importance == memory["importance"]
    assert not MemoryRelation.objects.filter(source_id=memory["id"]).exists()
    # Someone the memory is not shared with learns nothing, not even that it exists.
    stranger = f"{url}?acting_user_id=carol"
    assert api.patch(stranger, {"scope": "public"}, format="json").status_code == 404
    assert api.delete(stranger).status_code == 404


def test_the_owner_and_the_backend_acting_for_no_user_change_it(api: APIClient) -> None:
    memory = add_shared(api)
    url = f"{MEMORIES}/{memory['id']}"
    owner = api.patch(
        f"{url}?acting_user_id=alice", {"allowed_users": ["bob", "dan"]}, format="json"
    )
    assert owner.status_code == 200, owner.content
    assert owner.json()["allowed_users"] == ["bob", "dan"]
    public = api.patch(f"{url}?acting_user_id=alice", {"scope": "public"}, format="json")
    assert public.status_code == 200 and public.json()["scope"] == "public"
    # Public now: bob reads it and still may not change it; the backend key may.
    assert_refused(api.patch(f"{url}?acting_user_id=bob", {"importance": 0.2}, format="json"))
    backend = api.patch(url, {"importance": 0.2}, format="json")
    assert backend.status_code == 200 and backend.json()["importance"] == 0.2
    assert api.delete(url).status_code == 204
    assert not Memory.objects.filter(pk=memory["id"]).exists()


def test_an_owner_supersedes_only_their_own_memories_and_links_only_visible_ones(
    api: APIClient,
) -> None:
    def add(user: str, content: str, scope: str = "private") -> str:
        body = {"user_id": user, "type": "fact", "content": content, "scope": scope}
        return str(api.post(MEMORIES, body, format="json").json()["memory"]["id"])

    mine, theirs = add("alice", "I live in Porto"), add("bob", "I live in Faro", "public")
    hidden_id = add("bob", "My locker code is 2231")
    url = f"{MEMORIES}/{mine}/relations"
    supersede = {"type": "supersedes", "target_id": theirs}
    response = api.post(f"{url}?acting_user_id=alice", supersede, format="json")
    assert response.status_code == 400, response.content
    assert "target_id" in response.json()["error"]["fields"]
    created = {"user_id": "alice", "type": "fact", "content": "I live in Braga"}
    response = api.post(MEMORIES, {**created, "relations": [supersede]}, format="json")
    assert response.status_code == 400, response.content
    assert "relations" in response.json()["error"]["fields"]
    hidden = api.post(
        f"{url}?acting_user_id=alice",
        {"type": "related_to", "target_id": hidden_id},
        format="json",
    )
    assert hidden.status_code == 404, hidden.content
    faro = Memory.objects.get(pk=theirs)
    assert (faro.superseded_by_id, faro.valid_to) == (None, None)
    assert not MemoryRelation.objects.filter(target_id__in=[theirs, hidden_id]).exists()
    assert not Memory.objects.filter(content="I live in Braga").exists()
