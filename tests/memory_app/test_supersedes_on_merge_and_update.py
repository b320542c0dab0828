"""Seed 001: `supersedes` is written on merge and on update.

The model: a merge or an update keeps the memory's row and id and moves the replaced text
to its history, so what is superseded is a *version*. Each new version writes one edge
from the memory to itself with `target_version` = the version replaced and `reason`
merged / updated / reverted. The relations API lists it (once, outgoing); the memory
body's `relations`, the context's related memories and the cockpit leave it out."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from memory_app.models import MemoryRelation
from tests.memory_app.test_memories_api import MEMORIES, add
from tests.memory_app.test_memory_types_metadata_relations import AS, created

pytestmark = pytest.mark.django_db


def relations(api: APIClient, memory_id: str) -> list[dict[str, Any]]:
    response = api.get(f"{MEMORIES}/{memory_id}/relations", {"acting_user_id": "alice"})
    assert response.status_code == 200, response.content
    return response.json()["relations"]  # type: ignore[no-any-return]


def versions(api: APIClient, memory_id: str) -> list[tuple[int, str | None]]:
    history = api.get(f"{MEMORIES}/{memory_id}/history", {"acting_user_id": "alice"}).json()
    return [(v["version"], v["content"]) for v in history["versions"]]


def test_a_merge_writes_supersedes_to_the_replaced_version(api: APIClient) -> None:
    first = created(add(api, content="I prefer aisle seats on flights"))
    assert relations(api, first["id"]) == []
    merged = add(api, content="On flights I prefer aisle seats.")
    assert merged.json()["action"] == "merged"
    edges = relations(api, first["id"])
    assert [
        (
            e["type"],
            e["direction"],
            e["source_id"],
            e["target_id"],
            e["target_version"],
            e["reason"],
        )
        for e in edges
    ] == [("supersedes", "outgoing", first["id"], first["id"], 1, "merged")]
    # The version it points at holds the text that was replaced.
    assert versions(api, first["id"])[0] == (1, "I prefer aisle seats on flights")
    # Re-stating the same text again is a duplicate: no new version, no new edge.
    assert add(api, content="On flights I prefer aisle seats.").json()["action"] == "duplicate"
    assert len(relations(api, first["id"])) == 1


def test_update_and_revert_write_one_edge_per_replaced_version(api: APIClient) -> None:
    memory = created(add(api, content="Prefers window seats", type="fact"))
    other = created(add(api, content="Lives in Lisbon", type="fact"))
    url = f"{MEMORIES}/{memory['id']}"
    made = api.post(f"{url}/relations{AS}", {"type": "related_to", "target_id": other["id"]},
                    format="json")  # fmt: skip
    assert made.status_code == 201 and made.json()["target_version"] is None
    assert made.json()["reason"] == ""
    assert api.patch(url + AS, {"content": "Prefers aisle seats"}, format="json").status_code == 200
    assert api.post(f"{url}/revert{AS}", {"version": 1}, format="json").status_code == 200

    edges = relations(api, memory["id"])
    version_edges = [(e["target_version"], e["reason"]) for e in edges if e["target_version"]]
    assert version_edges == [(1, "updated"), (2, "reverted")]
    assert all(e["type"] == "supersedes" for e in edges if e["target_version"])
    # The memory body lists the caller's edges only; the version edges live in the history.
    body = api.get(url, {"acting_user_id": "alice"}).json()
    assert body["relations"] == [{"type": "related_to", "target_id": other["id"]}]
    # A caller's edge of the same type to itself is still refused (versions are not).
    refused = api.post(f"{url}/relations{AS}", {"type": "supersedes", "target_id": memory["id"]},
                       format="json")  # fmt: skip
    assert refused.status_code == 400
    # A version edge can be removed like any other; the history itself stays.
    edge_id = next(e["id"] for e in edges if e["target_version"] == 1)
    assert api.delete(f"{url}/relations/{edge_id}{AS}").status_code == 204
    assert [v for v, _ in versions(api, memory["id"])] == [1, 2, 3]
    # Deleting the memory takes its edges with it.
    assert api.delete(url + AS).status_code == 204
    assert not MemoryRelation.objects.filter(source_id=memory["id"]).exists()


def test_version_edges_do_not_crowd_the_contexts_related_memories(api: APIClient) -> None:
    sid = api.post("/api/v1/sessions", {"user_id": "alice", "agent_id": "shop"},
                   format="json").json()["id"]  # fmt: skip
    found = created(add(api, content="Has a peanut allergy", type="fact", importance=0.9))
    related = created(
        add(api, content="Carries an epinephrine auto-injector", type="fact", importance=0.9)
    )
    url = f"{MEMORIES}/{found['id']}"
    # 50 versions first: their edges are older than the related_to edge made after them,
    # and more than the neighbour lookup reads (4 x 12 edges, oldest first).
    for index in range(50):
        content = "Has a peanut allergy" + (" (confirmed)" if index % 2 == 0 else "")
        assert api.patch(url + AS, {"content": content}, format="json").status_code == 200
    api.post(f"{url}/relations{AS}", {"type": "related_to", "target_id": related["id"]},
             format="json")  # fmt: skip
    assert MemoryRelation.objects.filter(source_id=found["id"]).count() == 51
    # Better hits than the related memory, so that it can only come in through its edge.
    distractors = [{"user_id": "alice", "type": "fact", "importance": 0.2,
                    "content": f"Avoids peanut allergy trigger product PA-{100 + i}"}
                   for i in range(14)]  # fmt: skip
    assert api.post(f"{MEMORIES}/bulk", distractors, format="json").status_code == 200
    context = api.get(f"/api/v1/sessions/{sid}/context", {"query": "peanut allergy"}).json()
    kinds = {item["key"]: item["kind"] for item in context["included"]}
    assert kinds[f"memory:{found['id']}"] == "memory"
    assert kinds[f"memory:{related['id']}"] == "related_memory"
    assert all("(supersedes)" not in m["content"] for m in context["messages"])
