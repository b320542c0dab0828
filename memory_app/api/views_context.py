from __future__ import annotations

from dataclasses import asdict

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from memory_app.api.serializers_context import ContextQuerySerializer, ContextSerializer
from memory_app.services.context import context_serve
from sessions_app.api.tenancy import TenantAPIView


class SessionContextView(TenantAPIView):
    """The context for the session's next LLM call, packed under a token budget."""

    @extend_schema(
        parameters=[
            OpenApiParameter("query", OpenApiTypes.STR, description="What the next call is about."),
            OpenApiParameter("budget", OpenApiTypes.INT, description="Tokens, 50..200000."),
            OpenApiParameter("acting_user_id", OpenApiTypes.STR, description="For visibility."),
            OpenApiParameter("acting_roles", OpenApiTypes.STR, description="Comma-separated."),
            OpenApiParameter(
                "memory_limit", OpenApiTypes.INT, description="Memories searched (K), 0..100."
            ),
            OpenApiParameter("turn_limit", OpenApiTypes.INT, description="Open turns, 0..50."),
            OpenApiParameter(
                "policy", OpenApiTypes.STR, description="A named context policy to use."
            ),
        ],
        responses=ContextSerializer,
    )
    def get(self, request: Request, session_id: str) -> Response:
        params = ContextQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        context = context_serve(
            tenant=self.tenant,
            session_id=session_id,
            query=data.get("query", ""),
            budget=data.get("budget") or settings.ENGRAM_CONTEXT_DEFAULT_BUDGET,
            acting_user_id=data.get("acting_user_id"),
            acting_roles=data.get("acting_roles") or [],
            memory_limit=data.get("memory_limit"),
            turn_limit=data["turn_limit"],
            policy=data.get("policy"),
        )
        return Response(ContextSerializer(asdict(context)).data)
