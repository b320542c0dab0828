from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.api.filters import SessionFilter
from sessions_app.api.preconditions import (
    etag_parameter,
    if_match_parameter,
    parse_if_match,
    with_etag,
)
from sessions_app.api.serializers_sessions import (
    SessionCreateSerializer,
    SessionSerializer,
    SessionUpdateSerializer,
)
from sessions_app.api.tenancy import TenantGenericAPIView
from sessions_app.models import ChatSession
from sessions_app.selectors.session_state import state_etag
from sessions_app.selectors.sessions import session_get
from sessions_app.services.sessions import (
    session_create,
    session_delete,
    session_resume_or_create,
    session_update,
)


def session_response(session: ChatSession, status_code: int = status.HTTP_200_OK) -> Response:
    """The session, with its state's entity tag as the ETag header."""
    response = Response(SessionSerializer(session).data, status=status_code)
    return with_etag(response, state_etag(session.state))


ETAG = etag_parameter(200, 201)

IF_MATCH = if_match_parameter(
    "The `ETag` (`state_etag`) of the state this change is based on, or `*`. "
    "The update is made only if the session's state still has that tag (checked under "
    "the session's lock), else 412 `precondition_failed` and nothing changes. Without "
    "the header the update is unconditional: the last writer's state wins. A value that "
    "is not `*` or quoted tags is a 400 naming `If-Match`; a weak tag never matches."
)


class SessionListView(TenantGenericAPIView):
    queryset = ChatSession.objects.all()
    serializer_class = SessionSerializer
    filterset_class = SessionFilter
    # OpenAPI links (sessions_app.api.schema.add_links): the session made, and its user as
    # the acting user where a route takes one.
    openapi_produces = {"POST": {"session_id": "/id", "acting_user_id": "/user_id"}}

    @extend_schema(responses=SessionSerializer(many=True))
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(SessionSerializer(page, many=True).data)

    @extend_schema(
        request=SessionCreateSerializer,
        parameters=[ETAG],
        responses={
            201: SessionSerializer,
            200: OpenApiResponse(
                SessionSerializer,
                description="`resume: true` found an unexpired session for "
                "(user_id, agent_id, external_session_id).",
            ),
            400: OpenApiResponse(description="invalid: `error.fields` names each bad field"),
            409: OpenApiResponse(
                description="conflict: without `resume`, the user and agent already have a "
                "live session with this `external_session_id` (`error.session_id`); "
                "resume it with `resume: true`."
            ),
        },
    )
    def post(self, request: Request) -> Response:
        payload = SessionCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = dict(payload.validated_data)
        if data.pop("resume", False):
            session, created = session_resume_or_create(tenant=self.tenant, **data)
            code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
            return session_response(session, code)
        session = session_create(tenant=self.tenant, **data)
        return session_response(session, status.HTTP_201_CREATED)


class SessionDetailView(TenantGenericAPIView):
    serializer_class = SessionSerializer

    def _session(self, session_id: Any) -> ChatSession:
        return session_get(tenant=self.tenant, session_id=session_id)

    @extend_schema(parameters=[ETAG], responses=SessionSerializer)
    def get(self, request: Request, session_id: str) -> Response:
        return session_response(self._session(session_id))

    @extend_schema(
        request=SessionUpdateSerializer,
        parameters=[IF_MATCH, ETAG],
        responses={
            200: SessionSerializer,
            409: OpenApiResponse(
                description="conflict: the new `external_session_id` is that of another "
                "live session of the same user and agent (`error.session_id`); nothing "
                "changed."
            ),
            412: OpenApiResponse(
                description="`precondition_failed`: If-Match does not match the state's "
                "current tag (`error.state_etag`); nothing changed."
            ),
        },
    )
    def patch(self, request: Request, session_id: str) -> Response:
        session = self._session(session_id)
        if_match = parse_if_match(request)
        payload = SessionUpdateSerializer(data=request.data, partial=True)
        payload.is_valid(raise_exception=True)
        session = session_update(session=session, if_match=if_match, **payload.validated_data)
        return session_response(session)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, session_id: str) -> Response:
        session_delete(session=self._session(session_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
