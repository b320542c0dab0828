"""Memory endpoints: translate HTTP to services and selectors, nothing more.

Who is acting: GET/PATCH/DELETE take `acting_user_id` and `acting_roles` (comma-separated)
as query parameters; search takes them in its body (`acting_user_id` defaults to
`user_id`); the list also defaults `acting_user_id` to its `user_id` filter. Without an
acting user only public memories (and shared ones granted to the roles) are visible.
Reading is not writing: PATCH, DELETE, revert and the relation writes are the owner's
(or the tenant's own backend's, acting for no user); a reader the memory is shared with
gets 403 (`memory_get_for_write`).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import django_filters
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from memory_app.api.serializers import (
    MAX_BULK_ITEMS,
    ActorQuerySerializer,
    MemoryCreateSerializer,
    MemoryUpdateSerializer,
    MetadataField,
    memory_bulk_serializer,
    memory_draft_from,
)
from memory_app.api.serializers_history import (
    MemoryHistorySerializer,
    MemoryRevertSerializer,
)
from memory_app.api.serializers_memory import (
    MemoryAddResultSerializer,
    MemoryBulkResultSerializer,
    MemorySerializer,
)
from memory_app.api.serializers_search import (
    MemorySearchSerializer,
    SearchResultSerializer,
    search_result_data,
)
from memory_app.models import Memory, MemoryScope, MemoryType
from memory_app.selectors.memories import (
    Actor,
    memory_get,
    memory_get_for_write,
    memory_history,
    memory_list,
)
from memory_app.services.memories import (
    memory_add,
    memory_add_many,
    memory_delete,
    memory_record_access,
    memory_revert,
    memory_update,
)
from memory_app.services.search import memory_search_for_actor
from sessions_app.api.filters import StrictBooleanFilter, StrictChoiceFilter, StrictUUIDFilter
from sessions_app.api.schema import json_parameter
from sessions_app.api.tenancy import TenantAPIView, TenantGenericAPIView
from sessions_app.errors import InvalidInput

ACTOR_PARAMETERS = [
    OpenApiParameter(
        "acting_user_id",
        OpenApiTypes.STR,
        description="The end user on whose behalf the agent acts (visibility). Without "
        "it, a user's private memory is not visible: a 404 then says so, whether or not "
        "the memory exists.",
    ),
    OpenApiParameter(
        "acting_roles", OpenApiTypes.STR, description="Comma-separated roles of that user."
    ),
]

# The refusal of every change to a memory by someone who may read it but does not own it.
WRITE_REFUSED = OpenApiResponse(
    description="`permission_denied`: the acting user (acting_user_id or acting_roles) may "
    "read the memory (it is shared with them, or public) but is not its owner; only the "
    "owner, or a request acting for no user, may change or delete it."
)


def request_actor(request: Request, default_user: str | None = None) -> Actor:
    params = ActorQuerySerializer(data=request.query_params)
    params.is_valid(raise_exception=True)
    user_id, roles = params.actor_parts()
    return Actor(user_id=user_id or default_user or None, roles=roles)


class MemoryFilter(django_filters.FilterSet):
    user_id = django_filters.CharFilter(help_text="Only memories about this user.")
    agent_id = django_filters.CharFilter(help_text="Only memories of this agent.")
    type = StrictChoiceFilter(choices=MemoryType.choices, help_text="Only this type.")
    scope = StrictChoiceFilter(choices=MemoryScope.choices, help_text="Only this scope.")
    tag = django_filters.CharFilter(
        field_name="tags", lookup_expr="contains", method="filter_tag", help_text="Has this tag."
    )
    metadata = django_filters.CharFilter(
        method="filter_metadata",
        help_text='A JSON object the memory\'s metadata must contain, e.g. {"source": "crm"}.',
    )
    session_id = StrictUUIDFilter(help_text="Only memories learnt in this session.")
    pinned = StrictBooleanFilter(help_text="Only pinned (true) or unpinned (false).")

    class Meta:
        model = Memory
        fields = ["user_id", "agent_id", "type", "scope", "tag", "metadata", "session_id", "pinned"]

    def filter_tag(self, queryset: Any, name: str, value: str) -> Any:
        return queryset.filter(tags__contains=[value])

    @extend_schema_field(
        json_parameter(
            {
                "type": "object",
                "additionalProperties": True,
                "description": "A JSON object the memory's metadata must contain, "
                'e.g. {"source": "crm"}.',
            }
        )
    )
    def filter_metadata(self, queryset: Any, name: str, value: str) -> Any:
        field = MetadataField()
        try:
            wanted = field.run_validation(json.loads(value))
        except (ValueError, ValidationError) as exc:
            raise InvalidInput(fields={"metadata": ["A JSON object of key/values."]}) from exc
        return queryset.filter(metadata__contains=wanted)


def _add_response(result: Any) -> Response:
    body = MemoryAddResultSerializer(
        {"action": result.action, "similarity": result.similarity, "memory": result.memory}
    ).data
    code = status.HTTP_201_CREATED if result.action == "created" else status.HTTP_200_OK
    return Response(body, status=code)


class MemoryListView(TenantGenericAPIView):
    queryset = Memory.objects.all()
    serializer_class = MemorySerializer
    filterset_class = MemoryFilter
    list_query_params = tuple(ActorQuerySerializer().fields)
    # OpenAPI links (sessions_app.api.schema.add_links): the memory made, read as its own
    # user (a private memory is a 404 to anyone else).
    openapi_produces = {"POST": {"memory_id": "/memory/id", "acting_user_id": "/memory/user_id"}}

    def get_queryset(self) -> Any:
        actor = request_actor(self.request, default_user=self.request.query_params.get("user_id"))
        return memory_list(tenant=self.tenant, actor=actor)

    @extend_schema(parameters=ACTOR_PARAMETERS, responses=MemorySerializer(many=True))
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(MemorySerializer(page, many=True).data)

    @extend_schema(
        request=MemoryCreateSerializer,
        responses={
            201: MemoryAddResultSerializer,
            200: MemoryAddResultSerializer,
            404: OpenApiResponse(
                description="`not_found`: a relation names an unknown memory, or "
                "`session_id` no session of the tenant."
            ),
        },
        description="Add a memory. 201 `created`; 200 `merged` (a near-duplicate became a "
        "new version) or `duplicate` (already stored). Searchable on return. The exact "
        "text of a superseded memory said again after what superseded it began (the user "
        "changed their mind back) is 201 `created`: a new current memory that supersedes "
        "the current one of that chain, while the old one keeps its interval; said as of "
        "a time before that (`valid_from`, else `occurred_at`), it is 200 `duplicate` of "
        "the old one. A fact, "
        "preference or profile that gives one of the user's subjects (`subject`) another "
        "value than a current memory supersedes it: the older gets `superseded_by` and "
        "`valid_to`, stays searchable, and ranks below the newer for questions about now. "
        "400 on `valid_to` when it is not after `valid_from`.",
    )
    def post(self, request: Request) -> Response:
        payload = MemoryCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        return _add_response(memory_add(tenant=self.tenant, draft=payload.to_draft()))


class MemoryBulkView(TenantAPIView):
    @extend_schema(
        request=MemoryCreateSerializer(  # type: ignore[call-arg]  # many=True: a ListSerializer
            many=True, min_length=1, max_length=MAX_BULK_ITEMS
        ),
        responses={
            200: MemoryBulkResultSerializer,
            404: OpenApiResponse(
                description="`not_found`: a relation names an unknown memory, or an item's "
                "`session_id` no session of the tenant (field `<index>.session_id`)."
            ),
        },
        description="Add up to 500 memories in one transaction (backfills), embedded in "
        "batches; each item gets its own action.",
    )
    def post(self, request: Request) -> Response:
        if not isinstance(request.data, list):
            raise InvalidInput(
                "Send a JSON list of memories.", fields={"non_field_errors": ["Expected a list."]}
            )
        payload = memory_bulk_serializer(request.data)
        payload.is_valid(raise_exception=True)
        drafts = [memory_draft_from(item) for item in payload.validated_data]
        results = memory_add_many(tenant=self.tenant, drafts=drafts)
        body = {
            "results": [
                {
                    "index": index,
                    "action": result.action,
                    "memory_id": result.memory.pk,
                    "version": result.memory.version,
                }
                for index, result in enumerate(results)
            ],
            "counts": dict(Counter(result.action for result in results)),
        }
        return Response(MemoryBulkResultSerializer(body).data, status=status.HTTP_200_OK)


class MemoryDetailView(TenantAPIView):
    @extend_schema(parameters=ACTOR_PARAMETERS, responses=MemorySerializer)
    def get(self, request: Request, memory_id: str) -> Response:
        memory = memory_get(tenant=self.tenant, actor=request_actor(request), memory_id=memory_id)
        memory_record_access(memory_ids=[memory.pk])
        return Response(MemorySerializer(memory).data)

    @extend_schema(
        parameters=ACTOR_PARAMETERS,
        request=MemoryUpdateSerializer,
        responses={
            200: MemorySerializer,
            403: WRITE_REFUSED,
            409: OpenApiResponse(
                description="conflict: another current memory (not superseded) of the "
                "user, agent and type already says exactly the new `content`; a superseded "
                "memory's text may be taken"
            ),
        },
        description="Update: a new version; the previous one stays in the history. A "
        "change of `valid_from` / `valid_to` alone is not a version, nor is a PATCH whose "
        "values the memory already has (200 with the memory as it is); an interval must end "
        "after it starts, else 400 on `valid_to`. Only the memory's owner (acting_user_id "
        "= its user_id), or a request acting for no user, may update it; a user it is "
        "shared with gets 403.",
    )
    def patch(self, request: Request, memory_id: str) -> Response:
        memory = memory_get_for_write(
            tenant=self.tenant, actor=request_actor(request), memory_id=memory_id
        )
        payload = MemoryUpdateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        memory = memory_update(memory=memory, changes=dict(payload.validated_data))
        return Response(MemorySerializer(memory).data)

    @extend_schema(
        parameters=ACTOR_PARAMETERS,
        responses={204: None, 403: WRITE_REFUSED},
        description="Delete, with its history. Only the memory's owner, or a request "
        "acting for no user, may delete it; a user it is shared with gets 403.",
    )
    def delete(self, request: Request, memory_id: str) -> Response:
        memory = memory_get_for_write(
            tenant=self.tenant, actor=request_actor(request), memory_id=memory_id
        )
        memory_delete(memory=memory)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemoryHistoryView(TenantAPIView):
    @extend_schema(parameters=ACTOR_PARAMETERS, responses=MemoryHistorySerializer)
    def get(self, request: Request, memory_id: str) -> Response:
        memory = memory_get(tenant=self.tenant, actor=request_actor(request), memory_id=memory_id)
        body = {"memory_id": memory.pk, "versions": memory_history(memory=memory)}
        return Response(MemoryHistorySerializer(body).data)


REVERT_ERRORS = {
    404: OpenApiResponse(description="not_found: no such memory, or no such version"),
    409: OpenApiResponse(description="conflict: the version is current, or the text clashes"),
}


class MemoryRevertView(TenantAPIView):
    @extend_schema(
        parameters=ACTOR_PARAMETERS,
        request=MemoryRevertSerializer,
        responses={
            200: MemorySerializer,
            400: OpenApiResponse(description="invalid"),
            403: WRITE_REFUSED,
            **REVERT_ERRORS,
        },
        description="Make an earlier version current again, as a new version (the history "
        "keeps every version; the one replaced is marked `reverted`).",
    )
    def post(self, request: Request, memory_id: str) -> Response:
        memory = memory_get_for_write(
            tenant=self.tenant, actor=request_actor(request), memory_id=memory_id
        )
        payload = MemoryRevertSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        memory = memory_revert(memory=memory, version=payload.validated_data["version"])
        return Response(MemorySerializer(memory).data)


class MemorySearchView(TenantAPIView):
    @extend_schema(
        request=MemorySearchSerializer,
        responses=SearchResultSerializer,
        description="Hybrid search: vector (cosine) + BM25 full text (a memory in a thread is "
        "indexed with its neighbours' words), fused by z-normalised score, then recency, "
        "importance and access; under tenant and visibility filters. Time phrases of the "
        "query are read against `as_of` and boost the memories that occurred in them; a "
        "query that names a time and nothing else ('what happened last week?', 'what did "
        "we talk about in March?') lists the memories that occurred in it first, then the "
        "rest of the ranking when fewer than `limit` did; "
        "asked in the past (`as_of` more than a day ago), a memory that occurred more than "
        "a day after `as_of` ranks lower (part `after_question`); a short memory ranks a "
        "little lower than a long one (part `length`); a memory whose text opens with its "
        "speaker ('Caroline: ...') ranks higher when the query names that speaker (part "
        "`speaker`); the lines of a conversation within 3 positions of its line that "
        "ranks first by relevance and time rank a little higher (part `thread`). "
        "`valid_at`: only what held at that instant. A query about the current state "
        "('now', 'currently', 'still', ...; or a present-tense question about the user "
        "such as 'where do I live?', not 'where did I live?') halves the score of "
        "memories that no longer "
        "hold and keeps each below its successor (part `superseded`); they stay in the "
        "results.",
    )
    def post(self, request: Request) -> Response:
        payload = MemorySearchSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        kwargs = payload.search_kwargs()
        outcome = memory_search_for_actor(tenant=self.tenant, **kwargs)
        body = search_result_data(query=kwargs["query"], outcome=outcome, as_of=kwargs["as_of"])
        return Response(body)
