"""Typed edges between memories of a tenant: added with a memory or on their own, and
removed (a removed `supersedes` edge makes its target current again)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from django.db import models, transaction

from memory_app.models import Memory, MemoryRelation, RelationType
from memory_app.services.supersession import supersede_related, unsupersede
from sessions_app.errors import Conflict, InvalidInput, NotFound
from sessions_app.locks import advisory_xact_lock


def relations_add(memory: Memory, relations: Sequence[tuple[str, uuid.UUID]]) -> None:
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
        _refuse_supersession_of_another_user(memory, target, relation_type, field="relations")
        MemoryRelation.objects.get_or_create(
            tenant_id=memory.tenant_id,
            source=memory,
            target=target,
            type=relation_type,
            target_version=None,
        )


@transaction.atomic
def memory_relation_create(
    *, memory: Memory, relation_type: str, target_id: uuid.UUID
) -> MemoryRelation:
    """One typed edge from `memory` to another memory of the tenant (idempotent)."""
    if target_id == memory.pk:
        raise InvalidInput(fields={"target_id": ["A memory cannot relate to itself."]})
    target = Memory.objects.filter(tenant_id=memory.tenant_id, pk=target_id).first()
    if target is None:
        raise NotFound("The target memory does not exist.", fields={"target_id": ["Unknown."]})
    _refuse_supersession_of_another_user(memory, target, relation_type, field="target_id")
    if relation_type == RelationType.SUPERSEDES:
        _refuse_supersession_cycle(memory, target_id)
    relations_add(memory, [(relation_type, target_id)])
    supersede_related(memory, [(relation_type, target_id)])
    return MemoryRelation.objects.get(
        source=memory, target_id=target_id, type=relation_type, target_version__isnull=True
    )


def _refuse_supersession_of_another_user(
    memory: Memory, target: Memory, relation_type: str, *, field: str
) -> None:
    """A `supersedes` edge ends its target's validity, so it may only join two memories of
    one user (or two of the tenant's own, without a user): a user's newer fact replaces
    their older one, never another user's."""
    if relation_type == RelationType.SUPERSEDES and target.user_id != memory.user_id:
        raise InvalidInput(
            fields={
                field: [
                    f"Memory {target.pk} belongs to another user; only a memory of "
                    "the same user can be superseded."
                ]
            }
        )


def _refuse_supersession_cycle(memory: Memory, target_id: uuid.UUID) -> None:
    """Conflict if `target_id` already supersedes `memory`, directly or through other
    memories: the new edge would close a cycle in which every memory is superseded.
    Such edges are serialised per tenant, so two reverse edges at once cannot both pass."""
    advisory_xact_lock(f"memory-supersedes:{memory.tenant_id}")
    edges = MemoryRelation.objects.filter(
        tenant_id=memory.tenant_id, type=RelationType.SUPERSEDES, target_version__isnull=True
    )
    seen: set[uuid.UUID] = set()
    frontier = {target_id}
    while frontier:  # the memories that `target_id` supersedes, level by level
        if memory.pk in frontier:
            raise Conflict(
                "The target already supersedes this memory: the edge would make a cycle.",
                fields={"target_id": [f"Memory {target_id} already supersedes {memory.pk}."]},
            )
        seen |= frontier
        reached = edges.filter(source_id__in=frontier).values_list("target_id", flat=True)
        frontier = set(reached) - seen


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
