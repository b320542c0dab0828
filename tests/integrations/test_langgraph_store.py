"""`engram.langgraph.EngramStore` with the real `langgraph` package: a graph's long-term
store backed by a live Engram's memories, tenant- and user-scoped."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any

import pytest
from django.conf import settings
from engram import Engram
from engram.langgraph import EngramStore, EngramStoreError
from langgraph.store.base import BaseStore, InvalidNamespaceError

from memory_app.models import Memory
from sessions_app.services.api_keys import IssuedKey


def _store(live_server: Any, key: IssuedKey, agent_id: str = "planner") -> EngramStore:
    return EngramStore(agent_id=agent_id, client=Engram(live_server.url, key.secret, max_retries=0))


def test_a_graph_remembers_and_recalls_through_the_store(
    live_server: Any, live_key: IssuedKey
) -> None:
    sys.path.insert(0, str(settings.BASE_DIR / "examples"))
    try:
        from langgraph_store import build
    finally:
        sys.path.pop(0)
    store = _store(live_server, live_key)
    assert isinstance(store, BaseStore)
    graph = build(store)
    maria = {"configurable": {"user_id": "maria"}}
    for said in ("I only fly with window seats.", "I am allergic to peanuts."):
        graph.invoke({"said": said, "question": "", "recalled": []}, maria)
    result = graph.invoke(
        {"said": "My son is called Leo.", "question": "Which food must I avoid?", "recalled": []},
        maria,
    )
    assert result["recalled"][0] == "I am allergic to peanuts."
    assert len(result["recalled"]) == 3
    # Another user of the same tenant recalls only their own memories.
    result = graph.invoke(
        {"said": "I like jazz.", "question": "Which food must I avoid?", "recalled": []},
        {"configurable": {"user_id": "omar"}},
    )
    assert result["recalled"] == ["I like jazz."]
    rows = Memory.objects.filter(agent_id="planner")
    assert sorted(rows.values_list("user_id", flat=True)) == ["maria"] * 3 + ["omar"]


def test_put_get_update_delete_search_and_list(
    live_server: Any, live_key: IssuedKey, other_live_key: IssuedKey
) -> None:
    store = _store(live_server, live_key)
    store.put(("maria", "trips", "2026"), "lisbon", {"content": "Lisbon in May", "days": 5})
    store.put(("maria", "trips", "2026"), "oslo", {"content": "Oslo in winter", "days": 3})
    store.put(("maria", "food"), "likes", {"text": "Thai curry", "spicy": True})
    item = store.get(("maria", "trips", "2026"), "lisbon")
    assert item is not None and item.value == {"content": "Lisbon in May", "days": 5}
    assert item.namespace == ("maria", "trips", "2026") and item.key == "lisbon"

    store.put(("maria", "trips", "2026"), "lisbon", {"content": "Lisbon in June", "days": 7})
    updated = store.get(("maria", "trips", "2026"), "lisbon")
    assert updated is not None and updated.value["days"] == 7
    assert updated.created_at == item.created_at and updated.updated_at > item.updated_at
    assert Memory.objects.filter(user_id="maria").count() == 3  # a new version, not a row

    trips = store.search(("maria", "trips"), query="a trip in summer")
    assert {hit.key for hit in trips} == {"lisbon", "oslo"}
    assert all(hit.score is not None for hit in trips)
    long_trips = store.search(("maria",), filter={"days": {"$gte": 5}})
    assert [hit.key for hit in long_trips] == ["lisbon"]
    assert [hit.key for hit in store.search(("maria",), filter={"spicy": True})] == ["likes"]
    assert store.list_namespaces(prefix=("maria",)) == [
        ("maria", "food"),
        ("maria", "trips", "2026"),
    ]
    assert store.list_namespaces(prefix=("maria",), max_depth=2) == [
        ("maria", "food"),
        ("maria", "trips"),
    ]

    # Another tenant's key sees nothing of it, and cannot delete it.
    theirs = _store(live_server, other_live_key)
    assert theirs.get(("maria", "trips", "2026"), "lisbon") is None
    assert theirs.search(("maria",), query="Lisbon") == []
    theirs.delete(("maria", "trips", "2026"), "lisbon")
    assert store.get(("maria", "trips", "2026"), "lisbon") is not None

    store.delete(("maria", "trips", "2026"), "lisbon")
    assert store.get(("maria", "trips", "2026"), "lisbon") is None
    store.delete(("maria", "trips", "2026"), "lisbon")  # deleting twice is a no-op
    assert asyncio.run(store.aget(("maria", "food"), "likes")).value["spicy"] is True  # type: ignore[union-attr]


def test_bad_input_raises_the_stores_errors(live_server: Any, live_key: IssuedKey) -> None:
    store = _store(live_server, live_key)
    with pytest.raises(ValueError, match="agent_id"):
        EngramStore(agent_id="", client=store.client)
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {"content": "x"})
    with pytest.raises(InvalidNamespaceError):
        store.put(("maria", 3), "k", {"content": "x"})  # type: ignore[arg-type]
    with pytest.raises(InvalidNamespaceError):
        store.search((), query="anything")
    with pytest.raises(InvalidNamespaceError):
        store.list_namespaces()
    with pytest.raises(ValueError, match="value must be a dict"):
        store.put(("maria",), "k", ["not", "a", "dict"])  # type: ignore[arg-type]
    with pytest.raises(EngramStoreError) as too_long:
        store.put(("maria",), "k", {"content": "x" * 200_000})
    assert too_long.value.cause is not None and too_long.value.cause.status == 400  # type: ignore[attr-defined]
    store.put(("maria", "a"), "one", {"content": "Same words"})
    with pytest.raises(EngramStoreError, match="'one'"):
        # Same key and text in another namespace: Engram keeps a text once per user.
        store.put(("maria", "b"), "one", {"content": "Same words"})
    bad_key = EngramStore(agent_id="planner", client=Engram(live_server.url, "nope", max_retries=0))
    with pytest.raises(EngramStoreError) as denied:
        bad_key.get(("maria",), "k")
    assert denied.value.cause.status == 401  # type: ignore[union-attr]
    assert Memory.objects.filter(user_id="maria").count() == 1


def test_the_example_runs(live_server: Any, live_key: IssuedKey) -> None:
    env = {**os.environ, "ENGRAM_URL": live_server.url, "ENGRAM_API_KEY": live_key.secret}
    example = settings.BASE_DIR / "examples" / "langgraph_store.py"
    assert len(example.read_text().splitlines()) < 60
    run = subprocess.run(
        [sys.executable, str(example)], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert "recalled: I am allergic to peanuts." in run.stdout
