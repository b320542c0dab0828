from __future__ import annotations

from dataclasses import asdict

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from memory_app.api.serializers_context import ContextQuerySerializer, ContextSerializer
from memory_app.services.context import context_serve
from sessions_app.api.tenancy import TenantAPIView


class SessionContextView(TenantAPIView):
    """The context for the session's next LLM call, packed under a token budget."""

    @extend_schema(
        parameters=[ContextQuerySerializer],
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
            as_of=data.get("as_of"),
        )
        return Response(ContextSerializer(asdict(context)).data)
