"""Erasing a user: everything the tenant holds about them, in every table, at once.

memory_app owns this use case because it is the app allowed to import sessions_app: it
deletes the user's memories (versions and relations cascade), the memories learnt in the
user's sessions, the sessions (turns, steps, components, selections cascade) and the
idempotency records of requests on those sessions, removes the user from other
memories' `allowed_users`, and sends `user_erased` inside the same transaction so that
other apps (spend rollups…) delete theirs atomically with ours.
"""

from __future__ import annotations

from django.db import connection, transaction
from django.db.models import Q

from memory_app.models import (
    Memory,
    MemoryLexiconStat,
    MemoryRelation,
    MemoryTermStat,
    MemoryVersion,
)
from sessions_app.hooks import user_erased
from sessions_app.models import (
    ChatSession,
    ChatTurn,
    IdempotencyRecord,
    SessionComponent,
    SessionSelection,
    Tenant,
    TurnStep,
)


@transaction.atomic
def user_erase(*, tenant: Tenant, user_id: str) -> dict[str, int]:
    """Delete all the tenant's data about `user_id`; answers the row counts per kind."""
    sessions = ChatSession.objects.filter(tenant=tenant, user_id=user_id)
    session_ids = list(sessions.values_list("pk", flat=True))
    memories = Memory.objects.filter(tenant=tenant).filter(
        Q(user_id=user_id) | Q(session_id__in=session_ids)
    )
    counts = {
        "memories": memories.count(),
        "memory_versions": MemoryVersion.objects.filter(memory__in=memories).count(),
        "memory_relations": MemoryRelation.objects.filter(
            Q(source__in=memories) | Q(target__in=memories)
        ).count(),
        "sessions": len(session_ids),
        "turns": ChatTurn.objects.filter(session_id__in=session_ids).count(),
        "steps": TurnStep.objects.filter(
            Q(session_id__in=session_ids) | Q(tenant=tenant, user_id=user_id)
        ).count(),
        "components": SessionComponent.objects.filter(session_id__in=session_ids).count(),
        "selections": SessionSelection.objects.filter(session_id__in=session_ids).count(),
    }
    memories.delete()
    # The BM25 statistics of the user's memories hold their words: they go too.
    MemoryTermStat.objects.filter(tenant=tenant, user_id=user_id).delete()
    MemoryLexiconStat.objects.filter(tenant=tenant, user_id=user_id).delete()
    # Steps carry user_id themselves; any left outside the sessions (none expected) go too.
    TurnStep.objects.filter(tenant=tenant, user_id=user_id).delete()
    sessions.delete()
    # Idempotency records name the route they were used on, which holds the session id.
    idempotency = IdempotencyRecord.objects.none()
    if session_ids:
        linked = Q()
        for session_id in session_ids:
            linked |= Q(scope__contains=session_id)
        idempotency = IdempotencyRecord.objects.filter(tenant=tenant).filter(linked)
    counts["idempotency_records"] = idempotency.count() if session_ids else 0
    if session_ids:
        idempotency.delete()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memory SET allowed_users = array_remove(allowed_users, %s) "
            "WHERE tenant_id = %s AND %s = ANY(allowed_users)",
            [user_id, tenant.pk, user_id],
        )
        counts["memories_unshared"] = cursor.rowcount
    user_erased.send(sender=Tenant, tenant_id=tenant.pk, user_id=user_id)
    return counts
