"""memory_app's sections of a user's export (`GET /users/{id}/export`): the same rows
erasure deletes. Registered with `sessions_app.hooks.register_user_exporter` in
`apps.py`. Embeddings and the full-text column are left out: they are derived from the
text, which is exported."""

from __future__ import annotations

from typing import Any

from django.db.models import Q

from memory_app.models import Memory, MemoryRelation, MemoryVersion
from memory_app.window.models import ContextSummary
from sessions_app.selectors.sessions import session_ids_of_user

MEMORY_EXCLUDED = ("embedding", "search_vector", "tenant")


def memory_user_export(tenant_id: int, user_id: str) -> dict[str, Any]:
    """Memories about the user or learnt in their sessions (with versions and the edges
    touching them) and the compaction summaries of their sessions."""
    session_ids = session_ids_of_user(tenant_id=tenant_id, user_id=user_id)
    memories = Memory.objects.filter(tenant_id=tenant_id).filter(
        Q(user_id=user_id) | Q(session_id__in=session_ids)
    )
    fields = [f.name for f in Memory._meta.concrete_fields if f.name not in MEMORY_EXCLUDED]
    return {
        "memories": list(memories.order_by("created_at", "pk").values(*fields)),
        "memory_versions": list(
            MemoryVersion.objects.filter(memory__in=memories)
            .order_by("memory_id", "version")
            .values()
        ),
        "memory_relations": list(
            MemoryRelation.objects.filter(Q(source__in=memories) | Q(target__in=memories))
            .order_by("created_at", "pk")
            .values(
                "id", "source_id", "target_id", "type", "target_version", "reason", "created_at"
            )
        ),
        "context_summaries": list(
            ContextSummary.objects.filter(session_id__in=session_ids)
            .order_by("session_id", "first_turn")
            .values()
        ),
    }
