"""User routes: the right to erasure and its counterpart, the export."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.api.fields import (
    IDENTIFIER_MAX_LENGTH,
    IDENTIFIER_RULE,
    IDENTIFIER_SCHEMA,
    checked_identifier,
)
from sessions_app.api.serializers_users import UserErasureSerializer
from sessions_app.api.tenancy import TenantAPIView
from sessions_app.errors import InvalidInput
from sessions_app.models import Tenant
from sessions_app.selectors.export import EXPORT_FORMAT, user_export
from sessions_app.services.erasure import user_erase


def _checked_user_id(user_id: str) -> str:
    """The path's user id by the rule of a user id in a body (trimmed, a visible
    character), so that the user a body named is the one erased or exported."""
    checked = checked_identifier(user_id)
    if checked is None:
        raise InvalidInput(fields={"user_id": [IDENTIFIER_RULE]})
    return checked


USER_ID_PARAMETER = OpenApiParameter(
    "user_id", IDENTIFIER_SCHEMA, OpenApiParameter.PATH, description="The end user."
)
EXPORT_SUFFIX = "/export"
# The part before "/export" of a user id that ends in it: any characters but NUL (the
# suffix is the visible character an id needs), as many as leave room for the suffix.
USER_ID_BEFORE_EXPORT_PARAMETER = OpenApiParameter(
    "user_id",
    {
        "type": "string",
        "minLength": 1,
        "maxLength": IDENTIFIER_MAX_LENGTH - len(EXPORT_SUFFIX),
        "pattern": r"^[^\u0000]*$",
    },
    OpenApiParameter.PATH,
    description="The user's id without its final `/export`.",
)


class UserErasureView(TenantAPIView):
    """A user id containing "/" is sent as one percent-encoded segment (`team%2Falice`);
    a DELETE of an id ending in "/export" reaches `UserExportView.delete`, which erases
    that same user."""

    @extend_schema(
        parameters=[USER_ID_PARAMETER],
        responses={200: UserErasureSerializer},
        description="Erase everything the tenant holds about the user: memories (with "
        "versions and relations), sessions (turns, components, selections), "
        "idempotency records of those sessions, spend budgets keyed by the user's id "
        "(scopes user and user_agent; tenant, agent and model budgets stay) and the alerts "
        "sent about them, counted in `deleted`. The user's steps stay as anonymous spend "
        "(model, agent, counts, cost, time; no user, session, turn or content), counted in "
        "`anonymised`, so `/usage` totals do not change: grouped by user or session they "
        "are the row with key null. Other apps delete theirs on `user_erased`. Encode the "
        "id as one path segment (`/` as `%2F`).",
    )
    def delete(self, request: Request, user_id: str) -> Response:
        return _erased(self.tenant, user_id)


def _erased(tenant: Tenant, user_id: str) -> Response:
    user_id = _checked_user_id(user_id)
    erasure = user_erase(tenant=tenant, user_id=user_id)
    answer = {"user_id": user_id, "deleted": erasure.deleted, "anonymised": erasure.anonymised}
    return Response(UserErasureSerializer(answer).data)


class UserExportView(TenantAPIView):
    """`users/{user_id}/export` is routed before `users/{user_id}`: a user id may contain
    "/", so `users/x/export` matches both. The methods tell them apart, as only GET exports
    and only DELETE erases: a GET there exports the user "x" (the user "x/export" is
    exported at `users/x%2Fexport/export`), and a DELETE there erases the user "x/export",
    the only thing `DELETE /users/{user_id}` can mean for that path."""

    @extend_schema(
        summary="Everything held about a user, as one JSON document",
        description=(
            f"`format` is `{EXPORT_FORMAT}`. Sections: `sessions` (each with `turns` and "
            "their `steps`, `components`, `selections`), `memories` (without embeddings), "
            "`memory_versions`, `memory_relations`, `context_summaries`. The same rows "
            "`DELETE /users/{user_id}` erases. A read: nothing is recorded. Encode the id "
            "as one path segment (`/` as `%2F`)."
        ),
        parameters=[USER_ID_PARAMETER],
        responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="The export document."),
            400: OpenApiResponse(description=f"invalid: user_id of {IDENTIFIER_RULE}"),
        },
    )
    def get(self, request: Request, user_id: str) -> Response:
        return Response(user_export(tenant=self.tenant, user_id=_checked_user_id(user_id)))

    @extend_schema(
        summary="Erase the user whose id is `{user_id}/export`",
        description="What `DELETE /users/{user_id}` does, for the user whose id is this "
        "path's `user_id` followed by `/export`: a user id may contain `/`, and a DELETE "
        "of such an id arrives on this path. Nothing is exported.",
        parameters=[USER_ID_BEFORE_EXPORT_PARAMETER],
        responses={200: UserErasureSerializer},
    )
    def delete(self, request: Request, user_id: str) -> Response:
        return _erased(self.tenant, f"{user_id}{EXPORT_SUFFIX}")
