"""Erasing a user, memory_app's part: run by the `user_erased` receiver, inside the
transaction of sessions_app's `user_erase`.

Deletes the user's memories (versions and relations cascade), the memories learnt in the
user's sessions, and removes the user from other memories' `allowed_users`. It holds the
sessions' conversation locks first, as the turn writer does: a batch of the user's turns
being written as memory commits before the delete reads, so none outlives the erasure.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from django.db import connection, transaction
from django.db.models import Q

from memory_app.lexicon.fold import user_statistics_delete
from memory_app.models import Memory, MemoryRelation, MemoryVersion
from memory_app.services.conversation import conversation_lock


@transaction.atomic
def memories_erase_user(
    *, tenant_id: int, user_id: str, session_ids: Sequence[uuid.UUID] = ()
) -> dict[str, int]:
    """Delete the memories about `user_id`; answers the row counts per kind."""
    conversation_lock(session_ids)
    memories = Memory.objects.filter(tenant_id=tenant_id).filter(
        Q(user_id=user_id) | Q(session_id__in=list(session_ids))
    )
    counts = {
        "memories": memories.count(),
        "memory_versions": MemoryVersion.objects.filter(memory__in=memories).count(),
        "memory_relations": MemoryRelation.objects.filter(
            Q(source__in=memories) | Q(target__in=memories)
        ).count(),
    }
    memories.delete()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memory SET allowed_users = array_remove(allowed_users, %s) "
            "WHERE tenant_id = %s AND %s = ANY(allowed_users)",
            [user_id, tenant_id, user_id],
        )
        counts["memories_unshared"] = cursor.rowcount
    # The BM25 statistics of the user's memories hold their words: they go too, and the
    # tenant's sums lose what they held of them.
    user_statistics_delete(tenant_id=tenant_id, user_id=user_id)
    return counts
