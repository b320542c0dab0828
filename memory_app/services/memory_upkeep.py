"""A stored memory's upkeep besides edits (memory_versions) and merges: delete, pin,
access counts, re-embed. Re-exported by memory_app.services.memories, where callers
import every memory write service from."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from django.db import transaction

from memory_app.embedding import embedder
from memory_app.models import Memory
from memory_app.passage_vectors.vectors import embed_documents
from memory_app.passage_vectors.writes import passages_replace
from memory_app.services.access import memory_access_record
from memory_app.services.memory_threads import refresh_thread_window
from memory_app.services.supersession import supersession_relink


@transaction.atomic
def memory_delete(*, memory: Memory) -> None:
    """Deletes the memory with its versions and relations (cascade); its thread
    neighbours' lexical windows close over the gap, and the memories it superseded take
    its place in the chain (`supersession_relink`: its successor and end, so none if it
    was current)."""
    supersession_relink(memory)
    neighbour = None
    if memory.thread_key and memory.thread_order is not None:
        thread = Memory.objects.filter(
            tenant_id=memory.tenant_id, user_id=memory.user_id, thread_key=memory.thread_key
        )
        before = thread.filter(thread_order__lt=memory.thread_order).order_by("-thread_order")
        after = thread.filter(thread_order__gt=memory.thread_order).order_by("thread_order")
        neighbour = before.first() or after.first()
    memory.delete()
    if neighbour is not None:
        refresh_thread_window(neighbour)


def memory_record_access(*, memory_ids: Sequence[uuid.UUID], now: datetime | None = None) -> int:
    """Count a read of every memory a search or read returned, off the request path:
    buffered in Valkey and flushed by a periodic task (`memory_app.services.access`)."""
    return memory_access_record(memory_ids=memory_ids, now=now)


def memory_set_pinned(*, memory: Memory, pinned: bool) -> Memory:
    """Pin or unpin. Not a new version: the text is unchanged, and a version row per
    click would bury the real edits in the history."""
    Memory.objects.filter(pk=memory.pk).update(pinned=pinned)
    memory.pinned = pinned
    return memory


def memory_reembed(*, memory: Memory) -> Memory:
    """Recompute the vector and the passages' with the configured embedder (after a
    model change, or to repair a bad vector). Not a new version: the text is unchanged."""
    embedded = embed_documents([memory.content])
    vector = embedded.vectors[0]
    model_name = embedder().model_name
    with transaction.atomic():
        Memory.objects.filter(pk=memory.pk).update(embedding=vector, embedding_model=model_name)
        passages_replace([(memory.pk, embedded.passages[0])])
    memory.embedding = vector
    memory.embedding_model = model_name
    return memory
