"""User routes: the right to erasure and its counterpart, the export."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.api.serializers_users import UserErasureSerializer
from sessions_app.api.tenancy import TenantAPIView
from sessions_app.errors import InvalidInput
from sessions_app.selectors.export import EXPORT_FORMAT, user_export
from sessions_app.services.erasure import user_erase


def _checked_user_id(user_id: str) -> str:
    if not user_id.strip() or len(user_id) > 255:
        raise InvalidInput(fields={"user_id": ["Between 1 and 255 characters."]})
    return user_id


class UserErasureView(TenantAPIView):
    @extend_schema(
        responses={200: UserErasureSerializer},
        description="Erase everything the tenant holds about the user: memories (with "
        "versions and relations), sessions (turns, steps, components, selections) and "
        "idempotency records of those sessions. Other apps delete theirs on `user_erased`.",
    )
    def delete(self, request: Request, user_id: str) -> Response:
        counts = user_erase(tenant=self.tenant, user_id=_checked_user_id(user_id))
        return Response(UserErasureSerializer({"user_id": user_id, "deleted": counts}).data)


class UserExportView(TenantAPIView):
    @extend_schema(
        summary="Everything held about a user, as one JSON document",
        description=(
            f"`format` is `{EXPORT_FORMAT}`. Sections: `sessions` (each with `turns` and "
            "their `steps`, `components`, `selections`), `memories` (without embeddings), "
            "`memory_versions`, `memory_relations`, `context_summaries`. The same rows "
            "`DELETE /users/{user_id}` erases. A read: nothing is recorded."
        ),
        responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="The export document."),
            400: OpenApiResponse(description="invalid: user_id of 1 to 255 characters"),
        },
    )
    def get(self, request: Request, user_id: str) -> Response:
        return Response(user_export(tenant=self.tenant, user_id=_checked_user_id(user_id)))
