"""Seeds 001 and 003: interest/event types, free metadata, relations
through the API, search filters, insertion gates, revert, the user export, related
memories in the context and `derived_from` on span memories."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from memory_app.models import Memory, MemoryRelation
from sessions_app.models import Tenant
from tests.memory_app.test_memories_api import MEMORIES, add, assert_error, search

pytestmark = pytest.mark.django_db
AS = "?acting_user_id=alice"  # memories are private: the acting user must be their owner


def created(response: Any) -> dict[str, Any]:
    assert response.status_code == 201, response.content
    return response.json()["memory"]  # type: ignore[no-any-return]


def test_interest_and_event_types_and_metadata(api: APIClient) -> None:
    interest = created(
        add(api, type="interest", content="Follows mechanical keyboards",
            metadata={"source": "crm", "score": 3})
    )  # fmt: skip
    event = created(add(api, type="event", content="Bought a ThinkPad on 2024-03-02"))
    assert interest["type"] == "interest" and event["type"] == "event"
    assert interest["metadata"] == {"source": "crm", "score": 3}
    assert event["metadata"] == {}

    listed = api.get(MEMORIES, {"user_id": "alice", "metadata": json.dumps({"source": "crm"})})
    assert [m["id"] for m in listed.json()["results"]] == [interest["id"]]
    bad = api.get(MEMORIES, {"user_id": "alice", "metadata": "not json"})
    assert_error(bad, 400, "invalid", "metadata")

    with override_settings(ENGRAM_MEMORY_METADATA_MAX_BYTES=64):
        too_big = add(api, content="Likes tea", metadata={"note": "x" * 80})
        assert_error(too_big, 400, "invalid", "metadata")
    assert_error(add(api, content="Likes tea", metadata=["a"]), 400, "invalid", "metadata")
    patched = api.patch(f"{MEMORIES}/{event['id']}{AS}", {"metadata": {"k": "v"}}, format="json")
    assert patched.status_code == 200 and patched.json()["metadata"] == {"k": "v"}


def test_relations_are_created_listed_and_deleted(api: APIClient, other_api: APIClient) -> None:
    a = created(add(api, content="Works at Acme Corp as a data engineer", type="fact"))
    b = created(add(api, content="Prefers dark mode in every editor"))
    url = f"{MEMORIES}/{a['id']}/relations"
    mine = url + AS
    made = api.post(mine, {"type": "related_to", "target_id": b["id"]}, format="json")
    assert made.status_code == 201, made.content
    edge = made.json()
    assert edge["direction"] == "outgoing" and edge["other_id"] == b["id"]
    again = api.post(mine, {"type": "related_to", "target_id": b["id"]}, format="json")
    assert again.json()["id"] == edge["id"]  # idempotent

    incoming = api.get(f"{MEMORIES}/{b['id']}/relations", {"acting_user_id": "alice"}).json()
    assert [(r["direction"], r["other_id"]) for r in incoming["relations"]] == [
        ("incoming", a["id"])
    ]
    assert api.get(f"{MEMORIES}/{a['id']}", {"acting_user_id": "alice"}).json()["relations"] == [
        {"type": "related_to", "target_id": b["id"]}
    ]
    assert_error(
        api.post(mine, {"type": "related_to", "target_id": a["id"]}, format="json"),
        400, "invalid", "target_id",
    )  # fmt: skip
    assert_error(
        api.post(mine, {"type": "likes", "target_id": b["id"]}, format="json"),
        400,
        "invalid",
        "type",
    )
    assert_error(
        api.post(mine, {"type": "related_to", "target_id": str(uuid.uuid4())}, format="json"),
        404, "not_found",
    )  # fmt: skip
    assert_error(other_api.get(mine), 404, "not_found")
    assert_error(other_api.delete(f"{url}/{edge['id']}{AS}"), 404, "not_found")

    assert api.delete(f"{url}/{edge['id']}{AS}").status_code == 204
    assert not MemoryRelation.objects.filter(pk=edge["id"]).exists()
    assert_error(api.delete(f"{url}/{edge['id']}{AS}"), 404, "not_found")


def test_search_filters(api: APIClient) -> None:
    opened = api.post("/api/v1/sessions", {"user_id": "alice", "agent_id": "a"}, format="json")
    session = opened.json()["id"]  # a memory names a session of its tenant
    low = created(add(api, content="Likes hiking in the Alps", importance=0.2, confidence=0.5))
    pinned = created(
        add(api, content="Likes hiking in Norway", importance=0.9, pinned=True,
            session_id=str(session), metadata={"trip": "2024"})
    )  # fmt: skip
    query = "hiking"

    def ids(**filters: Any) -> set[str]:
        return {hit["memory"]["id"] for hit in search(api, query, user_id="alice", **filters)}

    assert ids() == {low["id"], pinned["id"]}
    assert ids(session_id=str(session)) == {pinned["id"]}
    assert ids(pinned=True) == {pinned["id"]}
    assert ids(pinned=False) == {low["id"]}
    assert ids(min_importance=0.5) == {pinned["id"]}
    assert ids(min_confidence=0.9) == {pinned["id"]}
    assert ids(metadata={"trip": "2024"}) == {pinned["id"]}
    now = timezone.now()
    assert ids(created_from=(now - timedelta(hours=1)).isoformat()) == {low["id"], pinned["id"]}
    assert ids(created_to=(now - timedelta(hours=1)).isoformat()) == set()
    bad = api.post(
        f"{MEMORIES}/search",
        {"query": query, "created_from": now.isoformat(), "created_to": now.isoformat()},
        format="json",
    )
    assert_error(bad, 400, "invalid", "created_to")
    bad = api.post(f"{MEMORIES}/search", {"query": query, "min_importance": 2}, format="json")
    assert_error(bad, 400, "invalid", "min_importance")


@override_settings(ENGRAM_MEMORY_MIN_IMPORTANCE=0.3, ENGRAM_MEMORY_MIN_CONFIDENCE=0.6)
def test_gates_refuse_low_importance_or_confidence_with_a_reason(api: APIClient) -> None:
    response = add(api, content="Maybe likes jazz", importance=0.1)
    assert_error(response, 422, "memory_rejected", "importance")
    assert "below the floor" in response.json()["error"]["fields"]["importance"][0]
    assert_error(add(api, content="Maybe likes jazz", confidence=0.5), 422, "memory_rejected",
                 "confidence")  # fmt: skip
    bulk = api.post(
        f"{MEMORIES}/bulk",
        [{"user_id": "alice", "type": "fact", "content": "Lives in Oslo"},
         {"user_id": "alice", "type": "fact", "content": "Has a cat", "importance": 0.1}],
        format="json",
    )  # fmt: skip
    assert_error(bulk, 422, "memory_rejected", "1.importance")
    assert not Memory.objects.exists()  # nothing of the call was stored
    assert add(api, content="Maybe likes jazz", importance=0.1, pinned=True).status_code == 201
    assert add(api, content="Loves opera", importance=0.3, confidence=0.6).status_code == 201


def test_revert_makes_an_earlier_version_current_as_a_new_version(
    api: APIClient, other_api: APIClient
) -> None:
    memory = created(add(api, content="Prefers window seats", tags=["travel"]))
    url = f"{MEMORIES}/{memory['id']}"
    api.patch(url + AS, {"content": "Prefers aisle seats", "tags": ["travel", "flights"]},
              format="json")  # fmt: skip
    reverted = api.post(f"{url}/revert{AS}", {"version": 1}, format="json")
    assert reverted.status_code == 200, reverted.content
    body = reverted.json()
    assert body["version"] == 3 and body["content"] == "Prefers window seats"
    assert body["tags"] == ["travel"]
    hits = search(api, "window seats", user_id="alice")
    assert hits[0]["memory"]["id"] == memory["id"]  # re-embedded with the old text
    history = api.get(f"{url}/history", {"acting_user_id": "alice"}).json()["versions"]
    assert [(v["version"], v["replaced_by"]) for v in history] == [
        (1, "updated"),
        (2, "reverted"),
        (3, None),
    ]
    assert_error(api.post(f"{url}/revert{AS}", {"version": 3}, format="json"), 409, "conflict")
    assert_error(api.post(f"{url}/revert{AS}", {"version": 9}, format="json"), 404, "not_found")
    assert_error(api.post(f"{url}/revert{AS}", {"version": 0}, format="json"), 400, "invalid")
    assert_error(other_api.post(f"{url}/revert{AS}", {"version": 1}, format="json"), 404,
                 "not_found")  # fmt: skip


def test_user_export_holds_everything_erasure_removes(
    api: APIClient, other_api: APIClient, tenant: Tenant
) -> None:
    from tests.sessions_app.helpers import post_turn, turn_body

    sid = api.post("/api/v1/sessions", {"user_id": "alice", "agent_id": "shop"},
                   format="json").json()["id"]  # fmt: skip
    post_turn(api, sid, turn_body(user_message="I need a laptop"))
    a = created(add(api, content="Prefers matte screens", session_id=sid))
    b = created(add(api, content="Works nights", type="fact"))
    api.post(f"{MEMORIES}/{a['id']}/relations{AS}", {"type": "related_to", "target_id": b["id"]},
             format="json")  # fmt: skip
    api.patch(f"{MEMORIES}/{b['id']}{AS}", {"content": "Works night shifts"}, format="json")
    created(add(api, user_id="bob", content="Bob likes tea"))

    response = api.get("/api/v1/users/alice/export")
    assert response.status_code == 200, response.content
    doc = response.json()
    assert doc["format"] == "engram.user-export.v1" and doc["user_id"] == "alice"
    [session] = doc["sessions"]
    assert session["id"] == sid and session["turns"][0]["user_message"] == "I need a laptop"
    assert len(session["turns"][0]["steps"]) == 3
    assert {m["id"] for m in doc["memories"]} == {a["id"], b["id"]}
    assert "embedding" not in doc["memories"][0]
    assert [v["content"] for v in doc["memory_versions"]] == ["Works nights"]
    # The caller's edge, and the update's: b now supersedes its version 1.
    assert sorted((r["type"], r["target_version"]) for r in doc["memory_relations"]) == [
        ("related_to", None), ("supersedes", 1)
    ]  # fmt: skip
    assert "tenant_id" not in json.dumps(doc)

    assert other_api.get("/api/v1/users/alice/export").json()["sessions"] == []
    assert other_api.get("/api/v1/users/alice/export").json()["memories"] == []
    # After erasure the export is empty.
    assert api.delete("/api/v1/users/alice").status_code == 200
    empty = api.get("/api/v1/users/alice/export").json()
    assert empty["sessions"] == [] and empty["memories"] == [] and empty["memory_versions"] == []
    assert_error(api.get(f"/api/v1/users/{'x' * 256}/export"), 400, "invalid", "user_id")


def test_the_context_brings_a_found_memorys_direct_relations(api: APIClient) -> None:
    sid = api.post("/api/v1/sessions", {"user_id": "alice", "agent_id": "shop"},
                   format="json").json()["id"]  # fmt: skip
    # The anchor answers the query as well as the distractors below: search fuses BM25 and
    # cosine by score, so a memory matching one query term of two ranks under
    # fourteen matching both, whatever its importance.
    found = created(add(api, content="Has a peanut allergy", type="fact", importance=0.9))
    related = created(
        add(api, content="Carries an epinephrine auto-injector", type="fact", importance=0.9)
    )
    api.post(f"{MEMORIES}/{found['id']}/relations{AS}",
             {"type": "related_to", "target_id": related["id"]}, format="json")  # fmt: skip
    # More than the context's 12 memory hits that answer the query better than the related
    # memory, so that it comes in through its edge, not through the search.
    distractors = [{"user_id": "alice", "type": "fact", "importance": 0.2,
                    "content": f"Avoids peanut allergy trigger product PA-{100 + i}"}
                   for i in range(14)]  # fmt: skip
    assert api.post(f"{MEMORIES}/bulk", distractors, format="json").status_code == 200
    context = api.get(f"/api/v1/sessions/{sid}/context", {"query": "peanut allergy"}).json()
    kinds = {item["key"]: item["kind"] for item in context["included"]}
    assert kinds[f"memory:{found['id']}"] == "memory"
    assert kinds[f"memory:{related['id']}"] == "related_memory"
    text = "\n".join(message["content"] for message in context["messages"])
    assert "(related to) Carries an epinephrine auto-injector" in text


def test_a_span_memory_is_derived_from_the_memories_of_its_turns(tenant: Tenant) -> None:
    from memory_app.services.compaction import session_compact
    from memory_app.services.extraction import (
        memories_extract_from_span,
        memories_extract_from_turn,
    )
    from memory_app.window.models import ContextSummary
    from sessions_app.models import ChatTurn
    from tests.memory_app.window_helpers import new_session, record

    session = new_session(tenant)
    record(tenant, session, "I prefer laptops with matte screens", "Noted.")
    for i in range(10):
        record(tenant, session, f"question {i} about part EP-{300 + i}", "answer")
    first = ChatTurn.objects.get(session=session, turn_number=1)
    [from_turn] = memories_extract_from_turn(turn_id=first.pk)
    session_compact(session_id=session.pk)
    span = ContextSummary.objects.get(session=session, kind="span")
    assert span.first_turn == 1
    [episode] = memories_extract_from_span(summary_id=span.pk)
    edges = MemoryRelation.objects.filter(source=episode.memory, type="derived_from")
    assert [edge.target_id for edge in edges] == [from_turn.memory.pk]
