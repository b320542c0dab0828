"""Memory relation endpoints: the typed edges of one memory, listed, added and removed.
Reading them takes the memory's read access, changing them its write access
(`memory_get_for_write`), as in memory_app.api.views."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from memory_app.api.serializers_history import (
    RelationCreateSerializer,
    RelationListSerializer,
    RelationSerializer,
)
from memory_app.api.views import ACTOR_PARAMETERS, WRITE_REFUSED, request_actor
from memory_app.selectors.memories import memory_get, memory_get_for_write, memory_relations
from memory_app.services.memories import memory_relation_create, memory_relation_delete
from sessions_app.api.tenancy import TenantAPIView


class MemoryRelationListView(TenantAPIView):
    openapi_produces = {"POST": {"relation_id": "/id"}}

    @extend_schema(
        parameters=ACTOR_PARAMETERS,
        responses=RelationListSerializer,
        description="Every edge touching this memory. Besides the edges callers make, a "
        "merge, an update or a revert writes a `supersedes` edge from the memory to itself "
        "with `target_version` = the version it replaced and `reason` saying which: the "
        "memory keeps its id, the replaced text stays in its history.",
    )
    def get(self, request: Request, memory_id: str) -> Response:
        memory = memory_get(tenant=self.tenant, actor=request_actor(request), memory_id=memory_id)
        body = {"memory_id": memory.pk, "relations": memory_relations(memory=memory)}
        return Response(RelationListSerializer(body).data)

    @extend_schema(
        parameters=ACTOR_PARAMETERS,
        request=RelationCreateSerializer,
        responses={
            201: RelationSerializer,
            400: OpenApiResponse(
                description="invalid: unknown type, a self-relation, or a `supersedes` edge "
                "to a memory of another user"
            ),
            403: WRITE_REFUSED,
            404: OpenApiResponse(
                description="not_found: this memory, or a target the acting user may not see"
            ),
            409: OpenApiResponse(
                description="conflict on `target_id`: a `supersedes` edge whose target "
                "already supersedes this memory (directly or through others)"
            ),
        },
        description="Add an edge from this memory to another of the tenant (idempotent). "
        "A `supersedes` edge that would close a cycle of supersession is refused (409).",
    )
    def post(self, request: Request, memory_id: str) -> Response:
        memory = memory_get_for_write(
            tenant=self.tenant, actor=request_actor(request), memory_id=memory_id
        )
        payload = RelationCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        # The target must be one the acting user may see: an edge to a hidden memory
        # would disclose that it exists.
        memory_get(
            tenant=self.tenant,
            actor=request_actor(request),
            memory_id=payload.validated_data["target_id"],
        )
        relation = memory_relation_create(
            memory=memory,
            relation_type=payload.validated_data["type"],
            target_id=payload.validated_data["target_id"],
        )
        row = next(r for r in memory_relations(memory=memory) if r["id"] == relation.pk)
        return Response(RelationSerializer(row).data, status=status.HTTP_201_CREATED)


class MemoryRelationDetailView(TenantAPIView):
    @extend_schema(
        parameters=ACTOR_PARAMETERS,
        responses={
            204: None,
            403: WRITE_REFUSED,
            404: OpenApiResponse(description="not_found"),
            409: OpenApiResponse(
                description="`conflict`: the `supersedes` edge's target would be current "
                "again beside a current memory of the same user, agent and type with its "
                "text (the user said it again later); nothing changed."
            ),
        },
        description="Remove one edge touching this memory. Removing a `supersedes` edge "
        "between two memories makes its target current again (`superseded_by` null, the "
        "end it was given then cleared).",
    )
    def delete(self, request: Request, memory_id: str, relation_id: int) -> Response:
        memory = memory_get_for_write(
            tenant=self.tenant, actor=request_actor(request), memory_id=memory_id
        )
        memory_relation_delete(memory=memory, relation_id=relation_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
