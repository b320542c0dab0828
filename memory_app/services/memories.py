"""Writing memories: add (with dedupe and merge), bulk add, delete, pin, re-embed; the
entry point of the memory write services (see the re-exports below).

The add pipeline: normalise → exact duplicate (hash per tenant/user/agent/type, also
against earlier versions, so re-running an extraction changes nothing; not a superseded
memory's text said again after what superseded it began: the user changed their mind
back, so it is created and supersedes its chain's current memory, `changed_back_from`) →
near-duplicate (cosine ≥ ENGRAM_MEMORY_MERGE_THRESHOLD, same tenant, user, agent, type
and scope) merged into a new version (never a statement negating it: that one is
created and, of a fact, preference or profile, supersedes it) → otherwise created.
Dedupe never crosses agents (`agent_id` exactly, blank being the user's agent-less
memories): a memory written under an agent is found under that agent
(memory_app.services.memory_merge). Embedding happens
before the transaction opens, so no lock is held while the CPU computes vectors; a memory
is searchable once the call returns.

Concurrency: each add takes a transaction-scoped advisory lock on (tenant, user, agent,
type), the key its dedupe reads, so two identical (or near-identical) adds at once are
serialised and the second one sees the first; the unique constraint on the hash among
current memories is the backstop.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memory_app.embedding import embedder
from memory_app.models import Memory, MemoryVersion
from memory_app.passage_vectors.vectors import embed_documents
from memory_app.passage_vectors.writes import passages_insert, passages_replace
from memory_app.selectors.validity import began

# The sub-domains of memory writes live in memory_drafts, memory_text, memory_threads,
# memory_merge, memory_versions, memory_upkeep and memory_relations; the names imported
# "as" themselves below are re-exported, so callers import every memory write service
# from this module.
from memory_app.services.memory_drafts import AddResult as AddResult
from memory_app.services.memory_drafts import MemoryDraft as MemoryDraft
from memory_app.services.memory_drafts import new_memory
from memory_app.services.memory_merge import merge_into, nearest_same_kind
from memory_app.services.memory_relations import (
    memory_relation_create as memory_relation_create,
)
from memory_app.services.memory_relations import (
    memory_relation_delete as memory_relation_delete,
)
from memory_app.services.memory_relations import relations_add
from memory_app.services.memory_text import content_hash as content_hash
from memory_app.services.memory_text import normalise_text
from memory_app.services.memory_threads import refresh_thread_window as refresh_thread_window
from memory_app.services.memory_threads import (
    thread_key_of,
    thread_neighbours,
    thread_order_next,
    thread_windows,
)
from memory_app.services.memory_upkeep import memory_delete as memory_delete
from memory_app.services.memory_upkeep import memory_record_access as memory_record_access
from memory_app.services.memory_upkeep import memory_reembed as memory_reembed
from memory_app.services.memory_upkeep import memory_set_pinned as memory_set_pinned
from memory_app.services.memory_versions import memory_revert as memory_revert
from memory_app.services.memory_versions import memory_update as memory_update
from memory_app.services.supersession import (
    changed_back_from,
    draft_statement,
    lock_subject,
    may_state,
    memory_supersede,
    supersede_contradicted,
    supersede_related,
)
from memory_app.services.thread_writes import thread_rows_insert
from memory_app.subjects import Statement
from sessions_app.errors import InvalidInput, NotFound, Rejected
from sessions_app.locks import advisory_xact_lock
from sessions_app.selectors.sessions import session_ids_unknown

if TYPE_CHECKING:
    from sessions_app.models import Tenant

EMBED_BATCH = 64  # two shared cores: small batches keep other requests responsive
# Of memories with one text, the current one first: a changed mind stores the text again
# beside its superseded self.
CURRENT_FIRST = (F("superseded_by").asc(nulls_first=True), "-created_at")


def memory_add(*, tenant: Tenant, draft: MemoryDraft, now: datetime | None = None) -> AddResult:
    """Add one memory; see the module docstring for the pipeline."""
    return memory_add_many(tenant=tenant, drafts=[draft], now=now)[0]


def memory_gate_reasons(draft: MemoryDraft) -> dict[str, list[str]]:
    """Why the insertion gates (ENGRAM_MEMORY_MIN_IMPORTANCE / _MIN_CONFIDENCE) refuse
    the draft, per field; empty when it passes. A pinned memory passes: pinning is an
    explicit decision to keep it."""
    if draft.pinned:
        return {}
    reasons: dict[str, list[str]] = {}
    for name, floor in (
        ("importance", float(settings.ENGRAM_MEMORY_MIN_IMPORTANCE)),
        ("confidence", float(settings.ENGRAM_MEMORY_MIN_CONFIDENCE)),
    ):
        value = float(getattr(draft, name))
        if value < floor:
            reasons[name] = [f"{value} is below the floor of {floor}; not stored."]
    return reasons


def memory_add_many(
    *, tenant: Tenant, drafts: Sequence[MemoryDraft], now: datetime | None = None
) -> list[AddResult]:
    """Add several memories in one transaction (backfills), embedding in batches. Later
    items dedupe against earlier ones of the same call. A draft below an insertion gate
    fails the whole call with `Rejected` (422), before anything is written; callers that
    filter (extraction) drop such drafts first with `memory_gate_reasons`."""
    now = now or timezone.now()
    for index, draft in enumerate(drafts):
        draft.content = normalise_text(draft.content)
        if not draft.content:
            raise InvalidInput("Memory content is empty.", fields={"content": ["Empty."]})
        reasons = memory_gate_reasons(draft)
        if reasons:
            prefix = f"{index}." if len(drafts) > 1 else ""
            raise Rejected(
                "The memory is below an insertion gate; nothing was stored.",
                fields={f"{prefix}{name}": messages for name, messages in reasons.items()},
            )
    _check_sessions(tenant, drafts)
    vectors: list[list[float]] = []
    passages: list[list[list[float]]] = []
    texts = [draft.content for draft in drafts]
    for start in range(0, len(texts), EMBED_BATCH):
        embedded = embed_documents(texts[start : start + EMBED_BATCH])
        vectors += embedded.vectors
        passages += embedded.passages
    model_name = embedder().model_name
    with transaction.atomic():
        if len(drafts) > 1 and all(thread_key_of(draft) for draft in drafts):
            results = _add_threaded(tenant, drafts, vectors, model_name, now)
        else:
            results = [
                _add_one(tenant, draft, vector, model_name, now)
                for draft, vector in zip(drafts, vectors, strict=True)
            ]
        _store_passages(results, passages)
    return results


def _check_sessions(tenant: Tenant, drafts: Sequence[MemoryDraft]) -> None:
    """Each `session_id` names a session of the tenant; else NotFound naming the field
    (another tenant's session is as unknown as a missing one)."""
    ids = {draft.session_id for draft in drafts if draft.session_id is not None}
    unknown = session_ids_unknown(tenant_id=tenant.pk, session_ids=ids)
    for index, draft in enumerate(drafts):
        if draft.session_id in unknown:
            prefix = f"{index}." if len(drafts) > 1 else ""
            raise NotFound(
                "The session does not exist.",
                fields={f"{prefix}session_id": [f"Unknown session {draft.session_id}."]},
            )


def _store_passages(results: Sequence[AddResult], passages: list[list[list[float]]]) -> None:
    """The passages of the memories whose text the add wrote: inserted for each one
    created, replacing the old ones for each one merged into (the last draft merged into
    a memory being its text)."""
    created: list[tuple[uuid.UUID, list[list[float]]]] = []
    merged: dict[uuid.UUID, list[list[float]]] = {}
    for result, vectors in zip(results, passages, strict=True):
        if result.action == "created":
            created.append((result.memory.pk, vectors))
        elif result.action == "merged":
            merged[result.memory.pk] = vectors
    passages_insert(created)
    passages_replace(list(merged.items()))


def _add_threaded(
    tenant: Tenant,
    drafts: Sequence[MemoryDraft],
    vectors: list[list[float]],
    model_name: str,
    now: datetime,
) -> list[AddResult]:
    """`memory_add_many` of drafts that all sit in threads, set-based: the same answers
    as adding them one by one (exact duplicates of stored memories, of their earlier
    versions or of an earlier draft answer `duplicate`, unless a changed mind restates a
    superseded one; no near-duplicate merges in a thread), with the locks taken once, in
    a fixed order, and one INSERT."""
    statements = _lock_threaded(tenant, drafts)
    known = _stored_by_hash(tenant, drafts)
    next_order: dict[tuple[str, str], int] = {}
    results: list[AddResult | None] = []
    rows: list[Memory] = []
    changed_back: dict[uuid.UUID, Memory] = {}  # a created row → the head it supersedes
    for draft, vector in zip(drafts, vectors, strict=True):
        identity = (draft.user_id, draft.agent_id, draft.type, content_hash(draft.content))
        head = None
        if identity in known:
            start = began(draft.valid_from, draft.occurred_at, now)
            head = changed_back_from(known[identity], digest=identity[3], start=start)
            if head is None:
                results.append(AddResult("duplicate", known[identity], 1.0))
                continue
        thread = (draft.user_id, thread_key_of(draft))
        if thread not in next_order:  # after the thread's last memory, as one by one
            next_order[thread] = thread_order_next(tenant, draft.user_id, thread[1], None) or 0
        order = next_order[thread] if draft.thread_order is None else draft.thread_order
        next_order[thread] = max(next_order[thread], order + 1)
        memory = new_memory(tenant, draft, vector, model_name, now, thread[1], order)
        if head is not None:
            changed_back[memory.pk] = head
        known[identity] = memory
        rows.append(memory)
        results.append(None)
    thread_rows_insert(rows)
    created = iter(rows)
    out = [result or AddResult("created", next(created), None) for result in results]
    later = [row.pk for row in rows]
    for draft, statement, result in zip(drafts, statements, out, strict=True):
        if result.action == "created":
            later.remove(result.memory.pk)
            _relate_created(result.memory, draft, statement, written_after=later)
            if result.memory.pk in changed_back:
                _supersede_changed_back(changed_back[result.memory.pk], result.memory)
    return out


def _lock_threaded(tenant: Tenant, drafts: Sequence[MemoryDraft]) -> list[Statement | None]:
    """Take the locks of a threaded add once, in a fixed order; returns the statements."""
    for user_id, agent_id, memory_type in sorted({(d.user_id, d.agent_id, d.type) for d in drafts}):
        _lock_key(tenant, user_id, agent_id, memory_type)
    statements = [draft_statement(draft) for draft in drafts]
    subjects = {(d.user_id, st.subject) for d, st in zip(drafts, statements, strict=True) if st}
    for user_id, subject in sorted(subjects):
        lock_subject(tenant.pk, user_id, Statement(subject, ""))
    return statements


def _stored_by_hash(
    tenant: Tenant, drafts: Sequence[MemoryDraft]
) -> dict[tuple[str, str, str, str], Memory]:
    """The stored memories (current text or an earlier version) that the drafts would
    duplicate, by (user, agent, type, content hash)."""
    hashes = sorted({content_hash(d.content) for d in drafts})
    users = sorted({d.user_id for d in drafts})
    current = Memory.objects.filter(tenant=tenant, user_id__in=users, content_hash__in=hashes)
    found: dict[tuple[str, str, str, str], Memory] = {}
    for m in current.order_by(*CURRENT_FIRST):
        found.setdefault((m.user_id, m.agent_id, m.type, m.content_hash), m)
    earlier = MemoryVersion.objects.filter(
        memory__tenant=tenant, memory__user_id__in=users, content_hash__in=hashes
    ).select_related("memory")
    for version in earlier:
        m = version.memory
        found.setdefault((m.user_id, m.agent_id, m.type, version.content_hash), m)
    return found


def _lock_key(tenant: Tenant, user_id: str, agent_id: str, memory_type: str) -> None:
    advisory_xact_lock(f"memory:{tenant.pk}:{user_id}:{agent_id}:{memory_type}")


def _add_one(
    tenant: Tenant, draft: MemoryDraft, vector: list[float], model_name: str, now: datetime
) -> AddResult:
    _lock_key(tenant, draft.user_id, draft.agent_id, draft.type)
    statement = draft_statement(draft)
    lock_subject(tenant.pk, draft.user_id, statement)
    digest = content_hash(draft.content)
    existing = _stored_duplicate(tenant, draft, digest)
    changed_back = None
    if existing is not None:
        start = began(draft.valid_from, draft.occurred_at, now)
        changed_back = changed_back_from(existing, digest=digest, start=start)
        if changed_back is None:
            return AddResult("duplicate", existing, 1.0)

    thread_key = thread_key_of(draft)
    # A memory at a place in a thread is an event ("what was said then"): two similar
    # turns are two events, so only exact duplicates collapse, never near ones.
    near = None if thread_key else nearest_same_kind(tenant, draft, vector, statement)
    if near is not None and not near.reverses:
        clash = _merge_clash(tenant, near.memory, digest)
        if clash is not None:
            return AddResult("duplicate", clash, near.similarity)
        merge_into(near.memory, draft, statement, digest, vector, model_name, now)
        return AddResult("merged", near.memory, near.similarity)

    order = thread_order_next(tenant, draft.user_id, thread_key, draft.thread_order)
    memory = new_memory(tenant, draft, vector, model_name, now, thread_key, order)
    _insert_with_thread_window(memory)
    _relate_created(memory, draft, statement)
    if near is not None:
        _supersede_reversed(near.memory, memory)
    if changed_back is not None:
        _supersede_changed_back(changed_back, memory)
    return AddResult("created", memory, None)


def _supersede_changed_back(head: Memory, restated: Memory) -> None:
    """A superseded text said again after its chain's current memory (`head`) began: the
    restatement supersedes the head, unless its own relations or subject already did."""
    head.refresh_from_db(fields=["superseded_by"])
    if head.superseded_by_id is None:
        memory_supersede(older=head, newer=restated)


def _supersede_reversed(older: Memory, newer: Memory) -> None:
    """A new memory that negates a current one of the same kind ("I do not prefer aisle
    seats" after "I prefer aisle seats") supersedes it, where its type has supersession
    (a fact, preference or profile: the latest statement holds)."""
    if older.superseded_by_id is None and may_state(memory_type=newer.type, source=newer.source):
        memory_supersede(older=older, newer=newer)


def _stored_duplicate(tenant: Tenant, draft: MemoryDraft, digest: str) -> Memory | None:
    """The stored memory of the draft's user, agent and type whose text (current, else an
    earlier version's) has the draft's hash; a current memory before a superseded one."""
    same_key = Memory.objects.filter(
        tenant=tenant, user_id=draft.user_id, agent_id=draft.agent_id, type=draft.type
    )
    same_text = same_key.filter(content_hash=digest)
    existing = same_text.order_by(*CURRENT_FIRST).first()
    if existing is None:
        earlier = (
            MemoryVersion.objects.filter(memory__in=same_key, content_hash=digest)
            .select_related("memory")
            .first()
        )
        existing = earlier.memory if earlier else None
    return existing


def _merge_clash(tenant: Tenant, target: Memory, digest: str) -> Memory | None:
    """A current memory beside the merge target (same user, agent and type) whose text
    has the hash: merging into the target would duplicate it. A superseded one with the
    hash is history (a changed mind restates it), not a duplicate."""
    return Memory.objects.filter(
        tenant=tenant,
        user_id=target.user_id,
        agent_id=target.agent_id,
        type=target.type,
        content_hash=digest,
        superseded_by__isnull=True,
    ).first()


def _insert_with_thread_window(memory: Memory) -> None:
    """Insert a new memory and, in a thread, refresh its neighbours' windows."""
    # The new row is written with its own window, so that only its neighbours are
    # rewritten: each rewrite is an UPDATE of an indexed column, a new row version in
    # every index of `memory` (the HNSW graph included).
    neighbours = thread_neighbours(memory)
    if neighbours is not None:
        memory.thread_context = next(
            text for row, text in thread_windows(neighbours) if row is memory
        )
    memory.save(force_insert=True)
    if neighbours is not None:
        refresh_thread_window(memory, neighbours)


def _relate_created(
    memory: Memory,
    draft: MemoryDraft,
    statement: Statement | None,
    written_after: Iterable[Any] = (),
) -> None:
    """A created memory's relations, and the memories it supersedes by those relations
    and by contradicting them (`written_after`: rows of its batch it must not see yet)."""
    relations_add(memory, draft.relations)
    supersede_related(memory, draft.relations)
    supersede_contradicted(memory, statement, written_after=written_after)
