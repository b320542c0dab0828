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
from django.db import connection, transaction
from django.utils import timezone

from memory_app.embedding import embed_texts, embedder
from memory_app.models import (
    Memory,
    MemoryRelation,
    MemoryScope,
    MemorySource,
    MemoryVersion,
    RelationType,
)
from sessions_app.errors import Conflict, InvalidInput, NotFound
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


@dataclass
class AddResult:
    action: str  # "created" | "merged" | "duplicate"
    memory: Memory
    similarity: float | None = None


def memory_add(*, tenant: Tenant, draft: MemoryDraft, now: datetime | None = None) -> AddResult:
    """Add one memory; see the module docstring for the pipeline."""
    return memory_add_many(tenant=tenant, drafts=[draft], now=now)[0]


def memory_add_many(
    *, tenant: Tenant, drafts: Sequence[MemoryDraft], now: datetime | None = None
) -> list[AddResult]:
    """Add several memories in one transaction (backfills), embedding in batches. Later
    items dedupe against earlier ones of the same call."""
    now = now or timezone.now()
    for draft in drafts:
        draft.content = normalise_text(draft.content)
        if not draft.content:
            raise InvalidInput("Memory content is empty.", fields={"content": ["Empty."]})
    vectors: list[list[float]] = []
    texts = [draft.content for draft in drafts]
    for start in range(0, len(texts), EMBED_BATCH):
        vectors.extend(embed_texts(texts[start : start + EMBED_BATCH]))
    model_name = embedder().model_name
    results: list[AddResult] = []
    with transaction.atomic():
        for draft, vector in zip(drafts, vectors, strict=True):
            results.append(_add_one(tenant, draft, vector, model_name, now))
    return results


def _lock_key(tenant: Tenant, user_id: str, memory_type: str) -> None:
    advisory_xact_lock(f"memory:{tenant.pk}:{user_id}:{memory_type}")


def _add_one(
    tenant: Tenant, draft: MemoryDraft, vector: list[float], model_name: str, now: datetime
) -> AddResult:
    _lock_key(tenant, draft.user_id, draft.type)
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

    near = _nearest_same_kind(tenant, draft, vector)
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
        _merge(target, draft, digest, vector, model_name, now)
        return AddResult("merged", target, similarity)

    memory = Memory.objects.create(
        tenant=tenant,
        user_id=draft.user_id,
        agent_id=draft.agent_id,
        type=draft.type,
        scope=draft.scope,
        content=draft.content,
        summary=draft.summary,
        structured=draft.structured,
        content_hash=digest,
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
    )
    _relate(memory, draft.relations)
    return AddResult("created", memory, None)


def _nearest_same_kind(
    tenant: Tenant, draft: MemoryDraft, vector: list[float]
) -> tuple[Memory, float] | None:
    """The closest memory of the same user, type and scope at full precision (an exact
    scan over one user's memories of one type: small, and no index approximation)."""
    threshold = float(settings.ENGRAM_MEMORY_MERGE_THRESHOLD)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT id, 1 - (embedding <=> %s::vector) AS similarity
            FROM memory
            WHERE tenant_id = %s AND user_id = %s AND type = %s AND scope = %s
            ORDER BY embedding <=> %s::vector
            LIMIT 5
            """,
            [str(vector), tenant.pk, draft.user_id, draft.type, draft.scope, str(vector)],
        )
        rows = [(row[0], float(row[1])) for row in cursor.fetchall()]
    wanted = id_tokens(draft.content)
    candidates = [(pk, sim) for pk, sim in rows if sim >= threshold]
    if not candidates:
        return None
    memories = Memory.objects.select_for_update().in_bulk([pk for pk, _ in candidates])
    for pk, similarity in candidates:
        memory = memories.get(pk)
        if memory is not None and id_tokens(memory.content) == wanted:
            return memory, similarity
    return None


def _snapshot(memory: Memory, *, replaced_by: str, now: datetime) -> None:
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
    digest: str,
    vector: list[float],
    model_name: str,
    now: datetime,
) -> None:
    """The newer statement wins the text; everything else accumulates."""
    _snapshot(memory, replaced_by="merged", now=now)
    memory.content = draft.content
    memory.summary = draft.summary or memory.summary
    memory.structured = {**memory.structured, **draft.structured}
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
            "content_hash",
            "embedding",
            "embedding_model",
            "tags",
            "importance",
            "confidence",
            "version",
            "updated_at",
            "last_accessed_at",
        ]
    )
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
            tenant_id=memory.tenant_id, source=memory, target=target, type=relation_type
        )


@transaction.atomic
def _apply_update(
    memory: Memory,
    changes: dict[str, Any],
    vector: list[float] | None,
    now: datetime,
) -> Memory:
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    _snapshot(memory, replaced_by="updated", now=now)
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
    return memory


def memory_update(
    *, memory: Memory, changes: dict[str, Any], now: datetime | None = None
) -> Memory:
    """PATCH: a new version; the previous one goes to history. New text is re-embedded."""
    now = now or timezone.now()
    changes = dict(changes)
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
    return _apply_update(memory, changes, vector, now)


def memory_delete(*, memory: Memory) -> None:
    """Deletes the memory with its versions and relations (cascade)."""
    memory.delete()


def memory_record_access(*, memory_ids: Sequence[uuid.UUID], now: datetime | None = None) -> int:
    """One UPDATE for every memory a search or read returned: reads stay cheap."""
    if not memory_ids:
        return 0
    now = now or timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memory SET access_count = access_count + 1, last_accessed_at = %s "
            "WHERE id = ANY(%s::uuid[])",
            [now, [str(pk) for pk in memory_ids]],
        )
        return cursor.rowcount
