"""Writing memories: add (with dedupe and merge), bulk add, update, delete.

The add pipeline: normalise → exact duplicate (hash per tenant/user/agent/type, also
against earlier versions, so re-running an extraction changes nothing) → near-duplicate
(cosine ≥ ENGRAM_MEMORY_MERGE_THRESHOLD, same tenant, user, type and scope) merged into a
new version → otherwise created. Embedding happens before the transaction opens, so no
lock is held while the CPU computes vectors; a memory is searchable once the call returns.

Concurrency: each add takes a transaction-scoped advisory lock on (tenant, user, type),
so two identical (or near-identical) adds at once are serialised and the second one sees
the first; the unique constraint on the hash is the backstop.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection, models, transaction
from django.utils import timezone

from memory_app.embedding import embed_texts, embedder, vector_literal
from memory_app.models import (
    Memory,
    MemoryRelation,
    MemoryScope,
    MemorySource,
    MemoryVersion,
    RelationType,
)
from memory_app.services.access import memory_access_record
from memory_app.services.supersession import (
    draft_statement,
    lock_subject,
    memory_set_validity,
    states_other_value,
    subject_of,
    supersede_contradicted,
    supersede_related,
    unsupersede,
    validity_changes,
)
from memory_app.services.thread_writes import (
    THREAD_AFTER,
    THREAD_BEFORE,
    thread_rows_insert,
    window_text,
)
from memory_app.subjects import Statement
from sessions_app.errors import Conflict, InvalidInput, NotFound, Rejected
from sessions_app.locks import advisory_xact_lock

if TYPE_CHECKING:
    from sessions_app.models import Tenant

UNSET: Any = object()
EMBED_BATCH = 64  # two shared cores: small batches keep other requests responsive

_WHITESPACE = re.compile(r"\s+")
# Tokens with a digit in them: ids, order numbers, part numbers, amounts, dates.
_ID_TOKEN = re.compile(r"[\w][\w./-]*\d[\w./-]*|\d[\w./-]*", re.UNICODE)


def normalise_text(text: str) -> str:
    """NFKC, single spaces, trimmed: what we store and embed."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def content_hash(text: str) -> str:
    """Case-insensitive hash of normalised text: "I like tea" == "i like  tea"."""
    return hashlib.sha256(normalise_text(text).casefold().encode()).hexdigest()


def id_tokens(text: str) -> frozenset[str]:
    """The id-like tokens of a text. Two memories that differ in them ("order A-1" and
    "order B-2") are different facts however close their vectors are, so never merged."""
    return frozenset(token.strip("./-").casefold() for token in _ID_TOKEN.findall(text))


@dataclass
class MemoryDraft:
    """What a caller wants remembered; validated at the edge (serializers)."""

    user_id: str
    type: str
    content: str
    agent_id: str = ""
    scope: str = MemoryScope.PRIVATE
    summary: str = ""
    structured: dict[str, Any] = field(default_factory=dict)
    tags: Sequence[str] = ()
    importance: float = 0.5
    confidence: float = 1.0
    source: str = MemorySource.EXPLICIT_USER_INPUT
    session_id: uuid.UUID | None = None
    allowed_users: Sequence[str] = ()
    allowed_roles: Sequence[str] = ()
    pinned: bool = False
    relations: Sequence[tuple[str, uuid.UUID]] = ()  # (relation type, target memory id)
    metadata: dict[str, Any] = field(default_factory=dict)
    thread_key: str = ""
    thread_order: int | None = None
    occurred_at: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    subject: str = ""  # blank: read from the content by rules (memory_app.subjects)


@dataclass
class AddResult:
    action: str  # "created" | "merged" | "duplicate"
    memory: Memory
    similarity: float | None = None


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
    vectors: list[list[float]] = []
    texts = [draft.content for draft in drafts]
    for start in range(0, len(texts), EMBED_BATCH):
        vectors.extend(embed_texts(texts[start : start + EMBED_BATCH]))
    model_name = embedder().model_name
    results: list[AddResult] = []
    with transaction.atomic():
        if len(drafts) > 1 and all(thread_key_of(draft) for draft in drafts):
            return _add_threaded(tenant, drafts, vectors, model_name, now)
        for draft, vector in zip(drafts, vectors, strict=True):
            results.append(_add_one(tenant, draft, vector, model_name, now))
    return results


def _add_threaded(
    tenant: Tenant,
    drafts: Sequence[MemoryDraft],
    vectors: list[list[float]],
    model_name: str,
    now: datetime,
) -> list[AddResult]:
    """`memory_add_many` of drafts that all sit in threads, set-based: the same answers
    as adding them one by one (exact duplicates of stored memories, of their earlier
    versions or of an earlier draft answer `duplicate`; no near-duplicate merges in a
    thread), with the locks taken once, in a fixed order, and one INSERT."""
    for user_id, memory_type in sorted({(d.user_id, d.type) for d in drafts}):
        _lock_key(tenant, user_id, memory_type)
    statements = [draft_statement(draft) for draft in drafts]
    subjects = {(d.user_id, st.subject) for d, st in zip(drafts, statements, strict=True) if st}
    for user_id, subject in sorted(subjects):
        lock_subject(tenant.pk, user_id, Statement(subject, ""))
    known = _stored_by_hash(tenant, drafts)
    next_order: dict[tuple[str, str], int] = {}
    results: list[AddResult | None] = []
    rows: list[Memory] = []
    for draft, vector in zip(drafts, vectors, strict=True):
        identity = (draft.user_id, draft.agent_id, draft.type, content_hash(draft.content))
        if identity in known:
            results.append(AddResult("duplicate", known[identity], 1.0))
            continue
        thread = (draft.user_id, thread_key_of(draft))
        if thread not in next_order:  # after the thread's last memory, as one by one
            next_order[thread] = _thread_order(tenant, draft.user_id, thread[1], None) or 0
        order = next_order[thread] if draft.thread_order is None else draft.thread_order
        next_order[thread] = max(next_order[thread], order + 1)
        memory = _new_memory(tenant, draft, vector, model_name, now, thread[1], order)
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
            _relate(result.memory, draft.relations)
            supersede_related(result.memory, draft.relations)
            supersede_contradicted(result.memory, statement, written_after=later)
    return out


def _stored_by_hash(
    tenant: Tenant, drafts: Sequence[MemoryDraft]
) -> dict[tuple[str, str, str, str], Memory]:
    """The stored memories (current text or an earlier version) that the drafts would
    duplicate, by (user, agent, type, content hash)."""
    hashes = sorted({content_hash(d.content) for d in drafts})
    users = sorted({d.user_id for d in drafts})
    current = Memory.objects.filter(tenant=tenant, user_id__in=users, content_hash__in=hashes)
    found = {(m.user_id, m.agent_id, m.type, m.content_hash): m for m in current}
    earlier = MemoryVersion.objects.filter(
        memory__tenant=tenant, memory__user_id__in=users, content_hash__in=hashes
    ).select_related("memory")
    for version in earlier:
        m = version.memory
        found.setdefault((m.user_id, m.agent_id, m.type, version.content_hash), m)
    return found


def _lock_key(tenant: Tenant, user_id: str, memory_type: str) -> None:
    advisory_xact_lock(f"memory:{tenant.pk}:{user_id}:{memory_type}")


def _add_one(
    tenant: Tenant, draft: MemoryDraft, vector: list[float], model_name: str, now: datetime
) -> AddResult:
    _lock_key(tenant, draft.user_id, draft.type)
    statement = draft_statement(draft)
    lock_subject(tenant.pk, draft.user_id, statement)
    digest = content_hash(draft.content)
    same_key = Memory.objects.filter(
        tenant=tenant, user_id=draft.user_id, agent_id=draft.agent_id, type=draft.type
    )
    existing = same_key.filter(content_hash=digest).first()
    if existing is None:
        earlier = (
            MemoryVersion.objects.filter(memory__in=same_key, content_hash=digest)
            .select_related("memory")
            .first()
        )
        existing = earlier.memory if earlier else None
    if existing is not None:
        return AddResult("duplicate", existing, 1.0)

    thread_key = thread_key_of(draft)
    # A memory at a place in a thread is an event ("what was said then"): two similar
    # turns are two events, so only exact duplicates collapse, never near ones.
    near = None if thread_key else _nearest_same_kind(tenant, draft, vector, statement)
    if near is not None:
        target, similarity = near
        clash = Memory.objects.filter(
            tenant=tenant,
            user_id=target.user_id,
            agent_id=target.agent_id,
            type=target.type,
            content_hash=digest,
        ).first()
        if clash is not None:
            return AddResult("duplicate", clash, similarity)
        _merge(target, draft, statement, digest, vector, model_name, now)
        return AddResult("merged", target, similarity)

    order = _thread_order(tenant, draft.user_id, thread_key, draft.thread_order)
    memory = _new_memory(tenant, draft, vector, model_name, now, thread_key, order)
    # The new row is written with its own window, so that only its neighbours are
    # rewritten: each rewrite is an UPDATE of an indexed column, a new row version in
    # every index of `memory` (the HNSW graph included), and was most of a turn's write.
    neighbours = thread_neighbours(memory)
    if neighbours is not None:
        memory.thread_context = next(
            text for row, text in thread_windows(neighbours) if row is memory
        )
    memory.save(force_insert=True)
    if neighbours is not None:
        refresh_thread_window(memory, neighbours)
    _relate(memory, draft.relations)
    supersede_related(memory, draft.relations)
    supersede_contradicted(memory, statement)
    return AddResult("created", memory, None)


def _new_memory(
    tenant: Tenant,
    draft: MemoryDraft,
    vector: list[float],
    model_name: str,
    now: datetime,
    thread_key: str,
    thread_order: int | None,
) -> Memory:
    """The unsaved row of a new memory."""
    return Memory(
        tenant=tenant,
        user_id=draft.user_id,
        agent_id=draft.agent_id,
        type=draft.type,
        scope=draft.scope,
        content=draft.content,
        summary=draft.summary,
        structured=draft.structured,
        metadata=draft.metadata,
        content_hash=content_hash(draft.content),
        embedding=vector,
        embedding_model=model_name,
        importance=draft.importance,
        confidence=draft.confidence,
        tags=sorted(set(draft.tags)),
        source=draft.source,
        session_id=draft.session_id,
        created_at=now,
        updated_at=now,
        last_accessed_at=now,
        pinned=draft.pinned,
        allowed_users=sorted(set(draft.allowed_users)),
        allowed_roles=sorted(set(draft.allowed_roles)),
        thread_key=thread_key,
        thread_order=thread_order,
        occurred_at=draft.occurred_at,
        valid_from=draft.valid_from,
        valid_to=draft.valid_to,
        subject=subject_of(draft),
    )


def thread_key_of(draft: MemoryDraft) -> str:
    """The thread a draft belongs to: its explicit key, else the session it came from when
    it gives its place in it; blank for a free-standing memory."""
    if draft.thread_key:
        return draft.thread_key
    if draft.session_id is not None and draft.thread_order is not None:
        return f"session:{draft.session_id}"
    return ""


def _thread_order(tenant: Tenant, user_id: str, thread_key: str, order: int | None) -> int | None:
    """The given order, or (for a thread without one) after the thread's last memory:
    the order of the adds."""
    if not thread_key or order is not None:
        return order
    last = (
        Memory.objects.filter(tenant=tenant, user_id=user_id, thread_key=thread_key)
        .order_by("-thread_order")
        .values_list("thread_order", flat=True)
        .first()
    )
    return 0 if last is None else last + 1


@dataclass(frozen=True)
class ThreadNeighbours:
    """A memory with the memories around it in its thread, in thread order: as many
    before and after it as can share a window with it (`thread_neighbours`)."""

    rows: list[Memory]
    here: int  # the memory's index in `rows`


def thread_neighbours(memory: Memory) -> ThreadNeighbours | None:
    """`memory` (saved or not yet) among its thread's neighbours; None outside a thread."""
    if not memory.thread_key or memory.thread_order is None:
        return None
    thread = Memory.objects.filter(
        tenant_id=memory.tenant_id, user_id=memory.user_id, thread_key=memory.thread_key
    ).only("id", "content", "thread_order", "thread_context")
    reach = THREAD_BEFORE + THREAD_AFTER
    before = list(
        thread.filter(thread_order__lt=memory.thread_order).order_by("-thread_order")[:reach]
    )
    after = list(
        thread.filter(thread_order__gt=memory.thread_order).order_by("thread_order")[:reach]
    )
    return ThreadNeighbours([*reversed(before), memory, *after], len(before))


def thread_windows(neighbours: ThreadNeighbours) -> list[tuple[Memory, str]]:
    """The window text of every row whose window holds the memory, in thread order: the
    THREAD_AFTER rows before it, itself, and the THREAD_BEFORE after it."""
    rows, here = neighbours.rows, neighbours.here
    contents = [row.content for row in rows]
    return [
        (rows[index], window_text(contents, index))
        for index in range(max(0, here - THREAD_AFTER), min(len(rows), here + THREAD_BEFORE + 1))
    ]


def refresh_thread_window(memory: Memory, neighbours: ThreadNeighbours | None = None) -> int:
    """Rewrite `thread_context` (what the lexical side indexes) of `memory` and of the
    neighbours whose window it falls in: the THREAD_AFTER memories before it and the
    THREAD_BEFORE after it. Turns that are answered or explained by the next line ("Did
    you go?" / "Yes, last Friday") are found by the words of either. The BM25 statistics
    follow through the trigger on `memory`. A row whose window is already right is not
    written. `neighbours`: `thread_neighbours(memory)`, when the caller has read them.
    Returns how many rows changed."""
    neighbours = neighbours or thread_neighbours(memory)
    if neighbours is None:
        return 0
    changed = 0
    for row, text in thread_windows(neighbours):
        if row.thread_context != text:
            changed += Memory.objects.filter(pk=row.pk).update(thread_context=text)
            row.thread_context = text
    return changed


def _nearest_same_kind(
    tenant: Tenant, draft: MemoryDraft, vector: list[float], statement: Statement | None
) -> tuple[Memory, float] | None:
    """The closest memory of the same user, type and scope at full precision (an exact
    scan over one user's memories of one type: small, and no index approximation). One
    that gives the draft's subject another value ("I live in Porto" / "I live in Lisbon")
    is another fact however close, so never merged (memory_app.services.supersession)."""
    threshold = float(settings.ENGRAM_MEMORY_MERGE_THRESHOLD)
    literal = vector_literal(vector)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT id, 1 - (embedding <=> %s::vector) AS similarity
            FROM memory
            WHERE tenant_id = %s AND user_id = %s AND type = %s AND scope = %s
            ORDER BY embedding <=> %s::vector
            LIMIT 5
            """,
            [literal, tenant.pk, draft.user_id, draft.type, draft.scope, literal],
        )
        rows = [(row[0], float(row[1])) for row in cursor.fetchall()]
    wanted = id_tokens(draft.content)
    candidates = [(pk, sim) for pk, sim in rows if sim >= threshold]
    if not candidates:
        return None
    memories = Memory.objects.select_for_update().in_bulk([pk for pk, _ in candidates])
    for pk, similarity in candidates:
        memory = memories.get(pk)
        if (
            memory is not None
            and id_tokens(memory.content) == wanted
            and not states_other_value(memory, statement)
        ):
            return memory, similarity
    return None


def _snapshot(memory: Memory, *, replaced_by: str, now: datetime) -> None:
    """Move the current text to the history and record that the next version
    `supersedes` it (seed 001: written on merge and on update). The edge goes from the
    memory to itself at the replaced version: the row and its id survive a merge or an
    update, so the thing superseded is the version, not another memory."""
    MemoryRelation.objects.get_or_create(
        tenant_id=memory.tenant_id,
        source=memory,
        target=memory,
        type=RelationType.SUPERSEDES,
        target_version=memory.version,
        defaults={"reason": replaced_by},
    )
    MemoryVersion.objects.create(
        memory=memory,
        version=memory.version,
        content=memory.content,
        summary=memory.summary,
        structured=memory.structured,
        content_hash=memory.content_hash,
        tags=memory.tags,
        importance=memory.importance,
        confidence=memory.confidence,
        scope=memory.scope,
        source=memory.source,
        valid_from=memory.updated_at,
        replaced_at=now,
        replaced_by=replaced_by,
    )


def _merge(
    memory: Memory,
    draft: MemoryDraft,
    statement: Statement | None,
    digest: str,
    vector: list[float],
    model_name: str,
    now: datetime,
) -> None:
    """The newer statement wins the text; everything else accumulates."""
    _snapshot(memory, replaced_by="merged", now=now)
    memory.subject = statement.subject if statement is not None else memory.subject
    memory.content = draft.content
    memory.summary = draft.summary or memory.summary
    memory.structured = {**memory.structured, **draft.structured}
    memory.metadata = {**memory.metadata, **draft.metadata}
    memory.content_hash = digest
    memory.embedding = vector
    memory.embedding_model = model_name
    memory.tags = sorted(set(memory.tags) | set(draft.tags))
    memory.importance = max(memory.importance, draft.importance)
    memory.confidence = max(memory.confidence, draft.confidence)
    memory.version += 1
    memory.updated_at = now
    memory.last_accessed_at = now  # re-stated: as good as read
    memory.save(
        update_fields=[
            "content",
            "summary",
            "structured",
            "metadata",
            "content_hash",
            "embedding",
            "embedding_model",
            "tags",
            "importance",
            "confidence",
            "version",
            "updated_at",
            "last_accessed_at",
            "subject",
        ]
    )
    refresh_thread_window(memory)
    _relate(memory, draft.relations)


def _relate(memory: Memory, relations: Sequence[tuple[str, uuid.UUID]]) -> None:
    if not relations:
        return
    targets = Memory.objects.filter(
        tenant_id=memory.tenant_id, pk__in=[target for _, target in relations]
    ).in_bulk()
    for relation_type, target_id in relations:
        target = targets.get(target_id)
        if target is None:
            raise NotFound(
                "A related memory does not exist.",
                fields={"relations": [f"Unknown memory {target_id}."]},
            )
        if relation_type not in RelationType.values:
            raise InvalidInput(fields={"relations": [f"Unknown type {relation_type}."]})
        MemoryRelation.objects.get_or_create(
            tenant_id=memory.tenant_id,
            source=memory,
            target=target,
            type=relation_type,
            target_version=None,
        )


@transaction.atomic
def _apply_update(
    memory: Memory,
    changes: dict[str, Any],
    vector: list[float] | None,
    now: datetime,
    replaced_by: str = "updated",
) -> Memory:
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    _snapshot(memory, replaced_by=replaced_by, now=now)
    fields = list(changes)
    for name, value in changes.items():
        setattr(memory, name, value)
    if vector is not None:
        memory.embedding = vector
        memory.embedding_model = embedder().model_name
        memory.content_hash = content_hash(memory.content)
        clash = (
            Memory.objects.filter(
                tenant_id=memory.tenant_id,
                user_id=memory.user_id,
                agent_id=memory.agent_id,
                type=memory.type,
                content_hash=memory.content_hash,
            )
            .exclude(pk=memory.pk)
            .exists()
        )
        if clash:
            raise Conflict(
                "Another memory of this user already says exactly this.",
                fields={"content": ["Duplicate of another memory."]},
            )
        fields += ["embedding", "embedding_model", "content_hash"]
    memory.version += 1
    memory.updated_at = now
    memory.save(update_fields=[*fields, "version", "updated_at"])
    if vector is not None:
        refresh_thread_window(memory)
    return memory


def memory_update(
    *,
    memory: Memory,
    changes: dict[str, Any],
    now: datetime | None = None,
    replaced_by: str = "updated",
) -> Memory:
    """PATCH: a new version; the previous one goes to history. New text is re-embedded.
    A change of the validity interval alone is not a version (the text is unchanged)."""
    now = now or timezone.now()
    changes = dict(changes)
    validity = validity_changes(memory, changes)
    if not changes:
        return memory_set_validity(memory=memory, validity=validity)
    changes.update(validity)
    if "tags" in changes:
        changes["tags"] = sorted(set(changes["tags"]))
    for name in ("allowed_users", "allowed_roles"):
        if name in changes:
            changes[name] = sorted(set(changes[name]))
    vector = None
    if "content" in changes:
        changes["content"] = normalise_text(changes["content"])
        if not changes["content"]:
            raise InvalidInput("Memory content is empty.", fields={"content": ["Empty."]})
        if changes["content"] != memory.content:
            vector = embed_texts([changes["content"]])[0]
        else:
            del changes["content"]
    return _apply_update(memory, changes, vector, now, replaced_by)


REVERTED_FIELDS = ("content", "summary", "structured", "tags", "importance", "confidence", "scope")


def memory_revert(*, memory: Memory, version: int, now: datetime | None = None) -> Memory:
    """Make an earlier version's text current again, as a *new* version: history only
    grows, so a revert can itself be reverted. The version replaced is marked
    `reverted` in the history."""
    if version == memory.version:
        raise Conflict(
            f"Version {version} is already the current one.",
            fields={"version": ["Already current."]},
        )
    earlier = MemoryVersion.objects.filter(memory=memory, version=version).first()
    if earlier is None:
        raise NotFound(
            f"Version {version} of this memory does not exist.",
            fields={"version": ["No such version."]},
        )
    changes = {name: getattr(earlier, name) for name in REVERTED_FIELDS}
    return memory_update(memory=memory, changes=changes, now=now, replaced_by="reverted")


@transaction.atomic
def memory_relation_create(
    *, memory: Memory, relation_type: str, target_id: uuid.UUID
) -> MemoryRelation:
    """One typed edge from `memory` to another memory of the tenant (idempotent)."""
    if target_id == memory.pk:
        raise InvalidInput(fields={"target_id": ["A memory cannot relate to itself."]})
    _relate(memory, [(relation_type, target_id)])
    supersede_related(memory, [(relation_type, target_id)])
    return MemoryRelation.objects.get(
        source=memory, target_id=target_id, type=relation_type, target_version__isnull=True
    )


@transaction.atomic
def memory_relation_delete(*, memory: Memory, relation_id: int) -> None:
    """Remove one edge touching `memory` (as source or target). Removing a `supersedes`
    edge between two memories makes its target current again (`unsupersede`)."""
    edge = (
        MemoryRelation.objects.filter(pk=relation_id, tenant_id=memory.tenant_id)
        .filter(models.Q(source=memory) | models.Q(target=memory))
        .first()
    )
    if edge is None:
        raise NotFound("No such relation on this memory.")
    edge.delete()
    unsupersede(edge)


@transaction.atomic
def memory_delete(*, memory: Memory) -> None:
    """Deletes the memory with its versions and relations (cascade); its thread
    neighbours' lexical windows close over the gap."""
    neighbour = None
    if memory.thread_key and memory.thread_order is not None:
        neighbour = (
            Memory.objects.filter(
                tenant_id=memory.tenant_id,
                user_id=memory.user_id,
                thread_key=memory.thread_key,
                thread_order__lt=memory.thread_order,
            )
            .order_by("-thread_order")
            .first()
        ) or (
            Memory.objects.filter(
                tenant_id=memory.tenant_id,
                user_id=memory.user_id,
                thread_key=memory.thread_key,
                thread_order__gt=memory.thread_order,
            )
            .order_by("thread_order")
            .first()
        )
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
    """Recompute the vector with the configured embedder (after a model change, or to
    repair a bad vector). Not a new version: the text is unchanged."""
    vector = embed_texts([memory.content])[0]
    model_name = embedder().model_name
    Memory.objects.filter(pk=memory.pk).update(embedding=vector, embedding_model=model_name)
    memory.embedding = vector
    memory.embedding_model = model_name
    return memory
