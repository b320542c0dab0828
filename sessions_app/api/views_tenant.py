"""The caller's own tenant (its key's): read its settings, switch prompt capture."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.api.serializers_tenant import TenantSerializer, TenantUpdateSerializer
from sessions_app.api.tenancy import TenantAPIView
from sessions_app.services.tenant_settings import tenant_settings_update


class TenantView(TenantAPIView):
    @extend_schema(
        responses=TenantSerializer,
        description="The settings of the tenant the API key belongs to.",
    )
    def get(self, request: Request) -> Response:
        return Response(TenantSerializer(self.tenant).data)

    @extend_schema(
        request=TenantUpdateSerializer,
        responses=TenantSerializer,
        description="Change the tenant's own settings: `capture_prompts` (seed 000's "
        "optional prompt/completion capture, off by default). Budget defaults stay with "
        "the operators (admin). Any key of the tenant may do this: keys are not scoped.",
    )
    def patch(self, request: Request) -> Response:
        payload = TenantUpdateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        tenant = self.tenant
        if "capture_prompts" in payload.validated_data:
            tenant = tenant_settings_update(
                tenant=tenant, capture_prompts=payload.validated_data["capture_prompts"]
            )
        return Response(TenantSerializer(tenant).data)
