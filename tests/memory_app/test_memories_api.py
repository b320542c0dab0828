"""Memories through HTTP: add/dedupe/merge/history, search, visibility, tenancy, bad input."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from rest_framework.test import APIClient

from memory_app.models import Memory, MemoryVersion

pytestmark = pytest.mark.django_db

MEMORIES = "/api/v1/memories"


def add(api: APIClient, **fields: Any) -> Any:
    body = {"user_id": "alice", "agent_id": "shop", "type": "preference", **fields}
    return api.post(MEMORIES, body, format="json")


def search(api: APIClient, query: str, **fields: Any) -> list[dict[str, Any]]:
    response = api.post(f"{MEMORIES}/search", {"query": query, **fields}, format="json")
    assert response.status_code == 200, response.content
    return response.json()["results"]


def assert_error(response: Any, status: int, code: str, field: str | None = None) -> None:
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error["code"] == code
    if field is not None:
        assert field in error["fields"], error


def test_added_memory_is_searchable_at_once(api: APIClient) -> None:
    created = add(api, content="My order number for the laptop is A-73812", type="fact")
    assert created.status_code == 201
    assert created.json()["action"] == "created"
    memory = created.json()["memory"]
    assert memory["version"] == 1 and memory["embedding_model"] == "all-MiniLM-L6-v2"
    add(api, content="I like hiking in the mountains on weekends", type="preference")

    by_id = search(api, "A-73812", user_id="alice")
    assert by_id[0]["memory"]["id"] == memory["id"]
    assert by_id[0]["parts"]["lexical"] > 0
    paraphrase = search(api, "what did I buy a laptop under?", user_id="alice")
    assert paraphrase[0]["memory"]["id"] == memory["id"]
    parts = paraphrase[0]["parts"]
    assert set(parts) == {
        "semantic",
        "lexical",
        "relevance",
        "feedback",
        "rrf",
        "recency",
        "importance",
        "access",
        "time",
        "began_after",
        "superseded",
        "latest",
        "asked",
        "speaker",
        "thread",
        "after_question",
        "length",
    }
    assert 0 < paraphrase[0]["score"] <= 1
    # Reads are counted: buffered in Valkey by each search, written by the flush.
    from memory_app.services.access import memory_access_flush

    memory_access_flush()
    assert Memory.objects.get(pk=memory["id"]).access_count == 2


def test_same_content_twice_is_duplicate(api: APIClient) -> None:
    first = add(api, content="I prefer aisle seats on flights")
    again = add(api, content="  i prefer  AISLE seats on flights ")
    assert again.status_code == 200
    assert again.json()["action"] == "duplicate"
    assert again.json()["memory"]["id"] == first.json()["memory"]["id"]
    assert Memory.objects.count() == 1


def test_close_paraphrase_is_merged_into_version_two(api: APIClient) -> None:
    first = add(
        api, content="I prefer aisle seats on flights", tags=["travel"], importance=0.4
    ).json()
    merged = add(api, content="On flights I prefer aisle seats.", tags=["seating"], importance=0.9)
    assert merged.status_code == 200
    body = merged.json()
    assert body["action"] == "merged" and body["similarity"] >= 0.88
    memory = body["memory"]
    assert memory["id"] == first["memory"]["id"]
    assert memory["version"] == 2
    assert memory["content"] == "On flights I prefer aisle seats."
    assert memory["tags"] == ["seating", "travel"]
    assert memory["importance"] == 0.9
    history = api.get(f"{MEMORIES}/{memory['id']}/history", {"acting_user_id": "alice"}).json()[
        "versions"
    ]
    assert [v["content"] for v in history] == [
        "I prefer aisle seats on flights",
        "On flights I prefer aisle seats.",
    ]
    assert [v["current"] for v in history] == [False, True]
    assert history[0]["replaced_by"] == "merged"
    # Different preferences and different ids are never merged, however close.
    assert add(api, content="I like tea").json()["action"] == "created"
    assert add(api, content="I like coffee").json()["action"] == "created"
    order_a = add(api, type="fact", content="My order number is A-1001").json()
    order_b = add(api, type="fact", content="My order number is A-1002").json()
    assert (order_a["action"], order_b["action"]) == ("created", "created")


def test_same_content_under_another_agent_is_that_agents_own_memory(api: APIClient) -> None:
    first = add(api, agent_id="ag1", type="fact", content="My dog is called Rex", tags=["pets"])
    second = add(api, agent_id="ag2", type="fact", content="My dog is called Rex", tags=["home"])
    third = add(api, agent_id="ag2", type="fact", content="My dog is called Rex.", tags=["dog"])
    assert second.json()["action"] == "created" and second.json()["memory"]["agent_id"] == "ag2"
    assert third.json()["action"] == "merged"
    assert third.json()["memory"]["id"] == second.json()["memory"]["id"]
    for agent, memory in (("ag1", first.json()["memory"]), ("ag2", second.json()["memory"])):
        found = search(api, "dog", user_id="alice", agent_id=agent)
        assert [hit["memory"]["id"] for hit in found] == [memory["id"]]
        listed = api.get(MEMORIES, {"user_id": "alice", "agent_id": agent}).json()["results"]
        assert [m["id"] for m in listed] == [memory["id"]]
    assert Memory.objects.get(pk=first.json()["memory"]["id"]).tags == ["pets"]
    # An agent-less memory is its own key too, never merged into an agent's.
    agentless = add(api, agent_id="", type="fact", content="My dog is called Rex")
    assert agentless.json()["action"] == "created"
    assert agentless.json()["memory"]["agent_id"] == ""


def test_patch_makes_a_new_version_and_reembeds(api: APIClient) -> None:
    memory = add(api, content="I live in Lisbon", type="fact").json()["memory"]
    url = f"{MEMORIES}/{memory['id']}?acting_user_id=alice"
    patched = api.patch(url, {"content": "I live in Porto", "pinned": True}, format="json")
    assert patched.status_code == 200, patched.content
    assert patched.json()["version"] == 2 and patched.json()["pinned"] is True
    assert search(api, "Porto", user_id="alice")[0]["memory"]["id"] == memory["id"]
    history = api.get(f"{MEMORIES}/{memory['id']}/history?acting_user_id=alice").json()
    assert [v["content"] for v in history["versions"]] == ["I live in Lisbon", "I live in Porto"]
    assert api.delete(url).status_code == 204
    assert not Memory.objects.filter(pk=memory["id"]).exists()
    assert not MemoryVersion.objects.filter(memory_id=memory["id"]).exists()


def test_list_filters_and_paginates(api: APIClient) -> None:
    add(api, content="I like jazz", tags=["music"])
    add(api, content="I am allergic to peanuts", type="fact", tags=["health"])
    add(api, user_id="bob", content="I like techno", tags=["music"])
    listed = api.get(MEMORIES, {"user_id": "alice"}).json()
    assert {m["content"] for m in listed["results"]} == {
        "I like jazz",
        "I am allergic to peanuts",
    }
    assert [
        m["content"]
        for m in api.get(MEMORIES, {"user_id": "alice", "tag": "music"}).json()["results"]
    ] == ["I like jazz"]
    facts = api.get(MEMORIES, {"user_id": "alice", "type": "fact"}).json()["results"]
    assert [m["content"] for m in facts] == ["I am allergic to peanuts"]
    page = api.get(MEMORIES, {"user_id": "alice", "page_size": 1}).json()
    assert len(page["results"]) == 1 and page["next"]
    rest = api.get(page["next"]).json()
    assert len(rest["results"]) == 1
    assert rest["results"][0]["id"] != page["results"][0]["id"]


def add_memories_of_each_scope(api: APIClient) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Alice's private fact's id, a shared memory and a public policy."""
    private = add(api, content="My bank PIN hint is the cat's name Biscuit", type="fact").json()
    shared = add(
        api,
        content="Alice's team uses the staging cluster STG-42",
        type="fact",
        scope="shared",
        allowed_users=["carol"],
        allowed_roles=["admin"],
    ).json()["memory"]
    public = add(
        api,
        user_id="system",
        content="Returns are accepted within 30 days",
        type="policy",
        scope="public",
    ).json()["memory"]
    return private["memory"]["id"], shared, public


def assert_b_finds_private_memory_nowhere(api: APIClient, memory_id: str, shared_id: str) -> None:
    """B searches with every trick: by alice's user_id, by words, by id."""
    for query in ["Biscuit", "bank PIN hint", "cat name"]:
        for fields in ({"acting_user_id": "bob"}, {"user_id": "alice", "acting_user_id": "bob"}):
            ids = {hit["memory"]["id"] for hit in search(api, query, **fields)}
            assert memory_id not in ids
    assert memory_id in {hit["memory"]["id"] for hit in search(api, "Biscuit", user_id="alice")}
    listed = api.get(MEMORIES, {"user_id": "alice", "acting_user_id": "bob"}).json()["results"]
    assert memory_id not in {m["id"] for m in listed}
    assert shared_id not in {m["id"] for m in listed}
    for suffix in ("", "/history"):
        assert_error(
            api.get(f"{MEMORIES}/{memory_id}{suffix}?acting_user_id=bob"), 404, "not_found"
        )
        assert_error(api.get(f"{MEMORIES}/{memory_id}{suffix}"), 404, "not_found")
    assert_error(
        api.patch(f"{MEMORIES}/{memory_id}?acting_user_id=bob", {"pinned": True}, format="json"),
        404,
        "not_found",
    )
    assert_error(api.delete(f"{MEMORIES}/{memory_id}?acting_user_id=bob"), 404, "not_found")
    assert Memory.objects.filter(pk=memory_id, pinned=False).exists()


def assert_shared_and_public_reach_whom_they_name(
    api: APIClient, shared: dict[str, Any], public: dict[str, Any]
) -> None:
    """shared: listed users and roles see it; public: everyone in the tenant."""
    assert api.get(f"{MEMORIES}/{shared['id']}?acting_user_id=carol").status_code == 200
    assert api.get(f"{MEMORIES}/{shared['id']}?acting_user_id=bob").status_code == 404
    assert (
        api.get(f"{MEMORIES}/{shared['id']}?acting_user_id=bob&acting_roles=viewer,admin")
    ).status_code == 200
    bob_hits = search(api, "staging cluster", acting_user_id="bob", acting_roles=["admin"])
    assert shared["id"] in {hit["memory"]["id"] for hit in bob_hits}
    assert api.get(f"{MEMORIES}/{public['id']}?acting_user_id=bob").status_code == 200
    assert public["id"] in {
        hit["memory"]["id"] for hit in search(api, "returns", acting_user_id="bob")
    }


def test_private_memory_of_a_reaches_b_nowhere(api: APIClient) -> None:
    memory_id, shared, public = add_memories_of_each_scope(api)
    assert_b_finds_private_memory_nowhere(api, memory_id, shared["id"])
    assert_shared_and_public_reach_whom_they_name(api, shared, public)


def test_nothing_crosses_tenants(api: APIClient, other_api: APIClient) -> None:
    theirs = add(
        other_api, content="Globex secret: launch code ZX-99", type="fact", scope="public"
    ).json()["memory"]
    url = f"{MEMORIES}/{theirs['id']}?acting_user_id=alice"
    assert_error(api.get(url), 404, "not_found")
    assert_error(
        api.get(f"{MEMORIES}/{theirs['id']}/history?acting_user_id=alice"), 404, "not_found"
    )
    assert_error(api.patch(url, {"pinned": True}, format="json"), 404, "not_found")
    assert_error(api.delete(url), 404, "not_found")
    assert api.get(MEMORIES, {"user_id": "alice"}).json()["results"] == []
    assert search(api, "launch code ZX-99", user_id="alice") == []
    # The same content in our tenant is new here, not a duplicate of theirs.
    ours = add(api, content="Globex secret: launch code ZX-99", type="fact", scope="public")
    assert ours.json()["action"] == "created"
    assert api.delete("/api/v1/users/alice").json()["deleted"]["memories"] == 1
    assert other_api.get(url).status_code == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "x" * 8001}, "content"),
        ({"content": ""}, "content"),
        ({"content": 12}, "content"),
        ({"type": "gossip"}, "type"),
        ({"scope": "galaxy"}, "scope"),
        ({"importance": 1.5}, "importance"),
        ({"confidence": "very"}, "confidence"),
        ({"tags": "not-a-list"}, "tags"),
        ({"tags": ["x" * 65]}, "tags.0"),
        ({"structured": [1, 2]}, "structured"),
        ({"session_id": "nope"}, "session_id"),
        ({"user_id": ""}, "user_id"),
        ({"source": "rumour"}, "source"),
        ({"relations": [{"type": "related_to", "target_id": "x"}]}, "relations.0.target_id"),
    ],
)
def test_add_rejects_bad_input(api: APIClient, body: dict[str, Any], field: str) -> None:
    payload = {"user_id": "alice", "type": "fact", "content": "I like tea", **body}
    assert_error(api.post(MEMORIES, payload, format="json"), 400, "invalid", field)


def _assert_search_rejects_bad_input(api: APIClient) -> None:
    search_url = f"{MEMORIES}/search"
    assert_error(api.post(search_url, {}, format="json"), 400, "invalid", "query")
    assert_error(
        api.post(search_url, {"query": "q" * 2001}, format="json"), 400, "invalid", "query"
    )
    assert_error(
        api.post(search_url, {"query": "tea", "limit": 0}, format="json"), 400, "invalid", "limit"
    )
    assert_error(
        api.post(search_url, {"query": "tea", "types": ["gossip"]}, format="json"),
        400,
        "invalid",
        "types.0",
    )
    assert_error(
        api.post(search_url, {"query": "tea", "acting_roles": "admin"}, format="json"),
        400,
        "invalid",
        "acting_roles",
    )


def _assert_bulk_rejects_bad_input(api: APIClient) -> None:
    bulk_url = f"{MEMORIES}/bulk"
    assert_error(api.post(bulk_url, {"content": "x"}, format="json"), 400, "invalid")
    assert_error(api.post(bulk_url, [], format="json"), 400, "invalid")
    assert_error(
        api.post(
            bulk_url,
            [{"user_id": "a", "type": "fact", "content": "ok"}, {"type": "x"}],
            format="json",
        ),
        400,
        "invalid",
        "1.type",
    )
    too_many = [{"user_id": "a", "type": "fact", "content": f"fact {i}"} for i in range(501)]
    assert_error(api.post(bulk_url, too_many, format="json"), 400, "invalid")


def test_other_routes_reject_bad_input(api: APIClient, other_api: APIClient) -> None:
    memory = add(api, content="I like tea").json()["memory"]
    url = f"{MEMORIES}/{memory['id']}?acting_user_id=alice"
    assert_error(api.post(MEMORIES, [1, 2], format="json"), 400, "invalid")
    assert_error(api.patch(url, {}, format="json"), 400, "invalid", "non_field_errors")
    assert_error(api.patch(url, {"importance": -1}, format="json"), 400, "invalid", "importance")
    assert_error(api.patch(url, {"content": "y" * 9000}, format="json"), 400, "invalid", "content")
    assert_error(api.get(f"{MEMORIES}/not-a-uuid"), 404, "not_found")
    assert_error(api.get(f"{MEMORIES}/{uuid.uuid4()}/history"), 404, "not_found")
    assert_error(api.get(MEMORIES, {"acting_user_id": "a" * 300}), 400, "invalid", "acting_user_id")
    assert_error(api.get(MEMORIES, {"type": "gossip"}), 400, "invalid", "type")
    _assert_search_rejects_bad_input(api)
    _assert_bulk_rejects_bad_input(api)
    # Erasure: an absurd id is 400; no key is 401.
    assert_error(api.delete(f"/api/v1/users/{'u' * 300}"), 400, "invalid", "user_id")
    assert_error(APIClient().delete("/api/v1/users/alice"), 401, "not_authenticated")
    # A relation to another tenant's memory is not found.
    theirs = add(other_api, content="I like gin").json()["memory"]
    related = add(
        api,
        content="I like rum",
        relations=[{"type": "related_to", "target_id": theirs["id"]}],
    )
    assert_error(related, 404, "not_found", "relations")
    assert not Memory.objects.filter(content="I like rum").exists()


def test_bulk_add_reports_an_action_per_item(api: APIClient) -> None:
    items = [
        {"user_id": "alice", "type": "fact", "content": "I live in Lisbon"},
        {"user_id": "alice", "type": "fact", "content": "I work at Initech"},
        {"user_id": "alice", "type": "fact", "content": "i live in lisbon"},
        {"user_id": "alice", "type": "preference", "content": "I prefer aisle seats on flights"},
        {"user_id": "alice", "type": "preference", "content": "On flights I prefer aisle seats."},
    ]
    response = api.post(f"{MEMORIES}/bulk", items, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert [r["action"] for r in body["results"]] == [
        "created",
        "created",
        "duplicate",
        "created",
        "merged",
    ]
    assert body["counts"] == {"created": 3, "duplicate": 1, "merged": 1}
    assert Memory.objects.count() == 3
    hits = search(api, "Initech", user_id="alice")
    assert hits[0]["memory"]["content"] == "I work at Initech"


def test_a_role_longer_than_a_memory_stores_is_refused(api: APIClient) -> None:
    # The column holds roles of 64 characters and the response's schema says so; a
    # longer one (PostgreSQL would store it: it does not check an array's elements) is
    # a 400 naming the field, on create and on update. A character outside the BMP
    # counts as one.
    longest = "\U0001a07c" * 64
    created = add(api, content="Shared with the support team", scope="shared",
                  allowed_roles=[longest])  # fmt: skip
    assert created.status_code == 201, created.content
    memory = created.json()["memory"]
    assert memory["allowed_roles"] == [longest]
    too_long = longest + "x"
    assert_error(
        add(api, content="Another", scope="shared", allowed_roles=[too_long]),
        400, "invalid", "allowed_roles.0",
    )  # fmt: skip
    url = f"{MEMORIES}/{memory['id']}?acting_user_id=alice"
    assert_error(api.patch(url, {"allowed_roles": ["ok", too_long]}, format="json"), 400,
                 "invalid", "allowed_roles.1")  # fmt: skip
    assert api.get(url).json()["allowed_roles"] == [longest]
