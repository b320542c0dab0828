"""Versions of a memory: an edit or a merge moves the current text to the history
(`memory_version`, with a `supersedes` edge to the replaced version) and makes a new
version current; a revert brings an earlier text back as a new version, so history only
grows. A new text may not be another current memory's (409 on `content`); a superseded
memory's it may."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from memory_app.embedding import embedder
from memory_app.models import (
    CURRENT_CONTENT_UNIQUE,
    Memory,
    MemoryRelation,
    MemoryVersion,
    RelationType,
)
from memory_app.passage_vectors.vectors import Embedded, embed_documents
from memory_app.passage_vectors.writes import passages_replace
from memory_app.selectors.memories import current_twin
from memory_app.services.memory_text import content_hash, normalise_text
from memory_app.services.memory_threads import refresh_thread_window
from memory_app.services.supersession import memory_set_validity, validity_changes
from sessions_app.errors import Conflict, InvalidInput, NotFound


def version_snapshot(memory: Memory, *, replaced_by: str, now: datetime) -> None:
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


@transaction.atomic
def _apply_update(
    memory: Memory,
    changes: dict[str, Any],
    embedded: Embedded | None,
    now: datetime,
    replaced_by: str = "updated",
) -> Memory:
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    version_snapshot(memory, replaced_by=replaced_by, now=now)
    fields = list(changes)
    for name, value in changes.items():
        setattr(memory, name, value)
    if embedded is not None:
        memory.embedding = embedded.vectors[0]
        memory.embedding_model = embedder().model_name
        memory.content_hash = content_hash(memory.content)
        # A superseded memory with the text is history, not a duplicate: the edit takes
        # the text and supersedes nothing (it corrects what this memory says; a
        # restatement through POST /memories is a new statement, resolved there).
        if current_twin(memory) is not None:
            raise _duplicate_content()
        fields += ["embedding", "embedding_model", "content_hash"]
    memory.version += 1
    memory.updated_at = now
    memory.save(update_fields=[*fields, "version", "updated_at"])
    if embedded is not None:
        refresh_thread_window(memory)
        passages_replace([(memory.pk, embedded.passages[0])])
    return memory


def _duplicate_content() -> Conflict:
    return Conflict(
        "Another memory of this user already says exactly this.",
        fields={"content": ["Duplicate of another memory."]},
    )


def _is_current_text_clash(error: IntegrityError) -> bool:
    diag = getattr(error.__cause__, "diag", None)
    return getattr(diag, "constraint_name", None) == CURRENT_CONTENT_UNIQUE


def memory_update(
    *,
    memory: Memory,
    changes: dict[str, Any],
    now: datetime | None = None,
    replaced_by: str = "updated",
) -> Memory:
    """PATCH: a new version; the previous one goes to history. New text is re-embedded.
    Only the fields whose value differs are a change: a PATCH that restates the memory
    returns it as it is (same version, no history entry), and a change of the validity
    interval alone is not a version either (the text is unchanged)."""
    now = now or timezone.now()
    changes = dict(changes)
    validity = validity_changes(memory, changes)
    changes = _differing(memory, _normalised(changes))
    if not changes:
        return memory_set_validity(memory=memory, validity=validity)
    changes.update(validity)
    embedded = embed_documents([changes["content"]]) if "content" in changes else None
    try:
        return _apply_update(memory, changes, embedded, now, replaced_by)
    except IntegrityError as error:
        # A memory given the text concurrently, after `current_twin` read: the
        # unique constraint refused the second writer (its transaction is rolled back).
        if _is_current_text_clash(error):
            raise _duplicate_content() from error
        raise


SET_FIELDS = ("tags", "allowed_users", "allowed_roles")  # stored sorted, without repeats


def _normalised(changes: dict[str, Any]) -> dict[str, Any]:
    """The changes in the form the memory stores them."""
    for name in SET_FIELDS:
        if name in changes:
            changes[name] = sorted(set(changes[name]))
    if "content" in changes:
        changes["content"] = normalise_text(changes["content"])
        if not changes["content"]:
            raise InvalidInput("Memory content is empty.", fields={"content": ["Empty."]})
    return changes


def _differing(memory: Memory, changes: dict[str, Any]) -> dict[str, Any]:
    """The changes whose value is not the memory's already."""
    out = {}
    for name, value in changes.items():
        current = getattr(memory, name)
        if name in SET_FIELDS:
            current = sorted(set(current))
        if current != value:
            out[name] = value
    return out


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
