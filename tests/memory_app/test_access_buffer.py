"""Access statistics off the request path (no write on a read): a search counts its
hits in a Valkey buffer, the periodic flush task writes them; counts arrive, once each,
even across a flusher that died, and without Valkey the request writes them itself."""

from __future__ import annotations

import threading
import time
from array import array
from typing import Any

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from config.schedules import SCHEDULE
from memory_app.embedding import (
    SHARED_WRITES_PENDING_MAX,
    _cached_query_vector,
    _shared_set,
    _shared_writer,
    embed_query,
    embedder,
    shared_query_key,
    wait_for_shared_vectors,
)
from memory_app.models import Memory
from memory_app.services.access import BUFFER_KEY, CLAIMED_PREFIX, memory_access_flush
from memory_app.services.memories import memory_record_access
from memory_app.tasks import flush_memory_access
from memory_app.valkey import valkey

pytestmark = pytest.mark.django_db

MEMORIES = "/api/v1/memories"


@pytest.fixture(autouse=True)
def _empty_buffer() -> None:
    """Earlier tests' reads (rolled-back memories) must not blur the counts asserted here."""
    memory_access_flush()


def _add(api: APIClient, content: str) -> str:
    response = api.post(
        MEMORIES,
        {"user_id": "alice", "type": "fact", "content": content},
        format="json",
    )
    assert response.status_code == 201, response.content
    return str(response.json()["memory"]["id"])


def _search(api: APIClient, query: str) -> list[dict[str, Any]]:
    response = api.post(f"{MEMORIES}/search", {"query": query, "user_id": "alice"}, format="json")
    assert response.status_code == 200, response.content
    return response.json()["results"]


def test_search_buffers_reads_and_the_flush_task_writes_them(api: APIClient) -> None:
    laptop = _add(api, "My laptop order number is A-73812")
    bike = _add(api, "I ride a red bicycle to work")
    added_at = Memory.objects.get(pk=laptop).last_accessed_at

    hits = _search(api, "laptop order A-73812")
    assert {hit["memory"]["id"] for hit in hits} >= {laptop, bike}
    _search(api, "laptop order A-73812")
    # Nothing written by the requests themselves: the counts wait in Valkey.
    assert Memory.objects.get(pk=laptop).access_count == 0
    assert Memory.objects.get(pk=laptop).last_accessed_at == added_at
    assert valkey().hget(BUFFER_KEY, f"n:{laptop}") == b"2"

    result = flush_memory_access.delay().get()  # the beat task's own code path
    assert result["reads"] >= 4 and result["buffers"] == 1
    stored = Memory.objects.get(pk=laptop)
    assert stored.access_count == 2 and stored.last_accessed_at > added_at
    assert Memory.objects.get(pk=bike).access_count == 2
    assert not valkey().exists(BUFFER_KEY)

    # A second flush has nothing to add; a read after the flush lands in a new buffer.
    assert flush_memory_access.delay().get()["reads"] == 0
    _search(api, "bicycle")
    memory_access_flush()
    assert Memory.objects.get(pk=laptop).access_count == 3
    assert Memory.objects.get(pk=laptop).last_accessed_at > stored.last_accessed_at


def test_counts_left_by_a_dead_flusher_are_adopted_once_stale(api: APIClient) -> None:
    memory_id = _add(api, "The wifi password is hunter2")
    memory_record_access(memory_ids=[memory_id, memory_id])  # once per request
    memory_record_access(memory_ids=[memory_id])
    client = valkey()
    # A flusher claimed the buffer 10 minutes ago and died before writing it.
    stale = f"{CLAIMED_PREFIX}{time.time() - 600:.3f}:dead"
    client.rename(BUFFER_KEY, stale)
    memory_record_access(memory_ids=[memory_id])
    # Another flusher claimed this one a moment ago and may still be writing it: kept.
    young = f"{CLAIMED_PREFIX}{time.time():.3f}:busy"
    client.rename(BUFFER_KEY, young)

    report = memory_access_flush()
    assert report.buffers == 1 and report.reads == 2
    assert Memory.objects.get(pk=memory_id).access_count == 2
    assert not client.exists(stale) and client.exists(young)
    client.delete(young)


def test_a_deleted_memory_in_the_buffer_is_skipped(api: APIClient) -> None:
    kept = _add(api, "I am allergic to peanuts")
    gone = _add(api, "My locker is number 42")
    memory_record_access(memory_ids=[kept, gone])
    assert api.delete(f"{MEMORIES}/{gone}?acting_user_id=alice").status_code == 204

    report = memory_access_flush()
    assert report.memories == 2 and report.updated == 1
    assert Memory.objects.get(pk=kept).access_count == 1


def test_without_valkey_the_request_writes_the_counts_itself(api: APIClient) -> None:
    memory_id = _add(api, "My passport expires in March")
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        assert memory_record_access(memory_ids=[memory_id]) == 1
    assert Memory.objects.get(pk=memory_id).access_count == 1
    with override_settings(ENGRAM_MEMORY_ACCESS_BUFFER=False):
        _search(api, "passport expiry")
    assert Memory.objects.get(pk=memory_id).access_count == 2


def test_the_flush_is_a_periodic_task_shorter_than_its_period() -> None:
    entry = next(e for e in SCHEDULE if e.task == "memory_app.flush_memory_access")
    assert 0 < entry.expires < entry.every <= 60


def test_query_vectors_are_shared_between_processes_through_valkey() -> None:
    model = embedder().model_name
    text = f"which shoes did I return? {time.time()}"
    vector = embed_query(text)
    key = shared_query_key(model, text)
    wait_for_shared_vectors()  # stored off the request's thread
    assert list(array("f", valkey().get(key))) == vector  # exact float32 round trip
    assert 0 < valkey().ttl(key) <= 86400

    # Another process (an empty LRU) reads the shared vector instead of embedding: a
    # planted vector proves where it came from.
    planted = [0.0] * 383 + [1.0]
    valkey().set(key, array("f", planted).tobytes())
    _cached_query_vector.cache_clear()
    assert embed_query(text) == planted

    # Valkey down: the query is embedded as usual.
    _cached_query_vector.cache_clear()
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        assert embed_query(text) == vector
    _cached_query_vector.cache_clear()


def test_a_query_does_not_wait_for_its_vector_to_be_shared() -> None:
    # The writer thread is held: the query is embedded and answered all the same, and
    # its vector reaches Valkey once the writer goes on.
    model = embedder().model_name
    text = f"when is the dentist? {time.time()}"
    key = shared_query_key(model, text)
    held = threading.Event()
    _shared_writer().executor.submit(held.wait, 30)
    try:
        vector = embed_query(text)
        assert len(vector) == 384 and valkey().get(key) is None
    finally:
        held.set()
    wait_for_shared_vectors()
    assert list(array("f", valkey().get(key))) == vector
    _cached_query_vector.cache_clear()


def test_a_writer_behind_drops_vectors_instead_of_queueing_them() -> None:
    # Valkey slow or down: the writer falls behind. Past SHARED_WRITES_PENDING_MAX
    # waiting, a vector is not shared (the query still has it), so nothing piles up.
    stamp = time.time()
    keys = [f"engram:test-pending:{stamp}:{n}" for n in range(SHARED_WRITES_PENDING_MAX + 10)]
    held = threading.Event()
    _shared_writer().executor.submit(held.wait, 30)
    try:
        for key in keys:
            _shared_set(key, (0.5,) * 384)
    finally:
        held.set()
    wait_for_shared_vectors()
    stored = [key for key in keys if valkey().get(key) is not None]
    assert stored == keys[:SHARED_WRITES_PENDING_MAX]
    valkey().delete(*keys)
    # The slots are free again once the writer caught up.
    _shared_set(keys[-1], (0.5,) * 384)
    wait_for_shared_vectors()
    assert valkey().get(keys[-1]) is not None
    valkey().delete(keys[-1])
