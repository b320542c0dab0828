"""User routes: the right to erasure."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.api.serializers_users import UserErasureSerializer
from sessions_app.api.tenancy import TenantAPIView
from sessions_app.errors import InvalidInput
from sessions_app.services.erasure import user_erase


class UserErasureView(TenantAPIView):
    @extend_schema(
        responses={200: UserErasureSerializer},
        description="Erase everything the tenant holds about the user: memories (with "
        "versions and relations), sessions (turns, steps, components, selections) and "
        "idempotency records of those sessions. Other apps delete theirs on `user_erased`.",
    )
    def delete(self, request: Request, user_id: str) -> Response:
        if not user_id.strip() or len(user_id) > 255:
            raise InvalidInput(fields={"user_id": ["Between 1 and 255 characters."]})
        counts = user_erase(tenant=self.tenant, user_id=user_id)
        return Response(UserErasureSerializer({"user_id": user_id, "deleted": counts}).data)
