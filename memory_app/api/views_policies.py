"""`/tenant/context-policies`: the named context policies a tenant's sessions can use,
managed by the tenant (seed 004: compare policies on the same session). The rows live
with the tenant in sessions_app; their values are resolved here, where contexts are
assembled."""

from __future__ import annotations

import re

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from memory_app.api.serializers_policies import (
    ContextPolicyListSerializer,
    ContextPolicyOutSerializer,
    ContextPolicyWriteSerializer,
)
from memory_app.selectors.context import DEFAULT_MEMORY_LIMIT
from memory_app.window.policies import (
    ContextPolicy,
    context_policies_resolved,
    context_policy_find,
)
from sessions_app.api.fields import POLICY_NAME_PATTERN
from sessions_app.api.tenancy import TenantAPIView
from sessions_app.errors import InvalidInput, NotFound
from sessions_app.services.tenant_settings import context_policy_delete, context_policy_put

NAME = re.compile(POLICY_NAME_PATTERN)


def _checked_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise InvalidInput(
            fields={
                "name": ["1-64 letters, digits, '_', '.', '-', starting with a letter or digit."]
            }
        )
    return name


class ContextPolicyListView(TenantAPIView):
    @extend_schema(
        operation_id="tenant_context_policies_list",
        responses=ContextPolicyListSerializer,
        description="Every context policy the tenant's sessions can name: `default`, the "
        "settings' (ENGRAM_CONTEXT_POLICIES) and the tenant's own, with resolved values.",
    )
    def get(self, request: Request) -> Response:
        resolved = context_policies_resolved(
            tenant_id=self.tenant.pk, default_memory_limit=DEFAULT_MEMORY_LIMIT
        )
        policies = [policy.as_dict() for policy in resolved]
        return Response(ContextPolicyListSerializer({"policies": policies}).data)


NAME_PARAMETER = OpenApiParameter(
    "name",
    OpenApiTypes.STR,
    OpenApiParameter.PATH,
    pattern=POLICY_NAME_PATTERN,
    description="The policy's name (`default` is reserved for PUT and DELETE).",
)


@extend_schema_view(
    get=extend_schema(parameters=[NAME_PARAMETER]),
    put=extend_schema(parameters=[NAME_PARAMETER]),
    delete=extend_schema(parameters=[NAME_PARAMETER]),
)
class ContextPolicyDetailView(TenantAPIView):
    def _one(self, name: str) -> ContextPolicy:
        policy = context_policy_find(
            tenant_id=self.tenant.pk, name=name, default_memory_limit=DEFAULT_MEMORY_LIMIT
        )
        if policy is None:
            raise NotFound(f"No context policy {name!r} for this tenant.")
        return policy

    @extend_schema(responses=ContextPolicyOutSerializer, description="One policy, resolved.")
    def get(self, request: Request, name: str) -> Response:
        return Response(ContextPolicyOutSerializer(self._one(_checked_name(name)).as_dict()).data)

    @extend_schema(
        request=ContextPolicyWriteSerializer,
        responses={201: ContextPolicyOutSerializer, 200: ContextPolicyOutSerializer},
        description="Create (201) or replace (200) the tenant's policy `name`. A key left "
        "out or null takes the `default` policy's value. A settings policy of the same name "
        "is replaced for this tenant only; `default` cannot be redefined (400 on `name`).",
    )
    def put(self, request: Request, name: str) -> Response:
        payload = ContextPolicyWriteSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        _, created = context_policy_put(
            tenant=self.tenant, name=_checked_name(name), values=payload.validated_data
        )
        body = ContextPolicyOutSerializer(self._one(name).as_dict()).data
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(
        responses={
            204: None,
            404: OpenApiResponse(
                description="`not_found`: the tenant has no policy of that name (settings "
                "policies and `default` are not the tenant's to delete)."
            ),
        },
        description="Delete the tenant's policy. Its sessions fall back to the settings' "
        "policy of that name if there is one, else to `default`.",
    )
    def delete(self, request: Request, name: str) -> Response:
        context_policy_delete(tenant=self.tenant, name=_checked_name(name))
        return Response(status=status.HTTP_204_NO_CONTENT)
