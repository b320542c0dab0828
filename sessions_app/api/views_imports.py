"""`POST /api/v1/conversations/import`: past conversations become sessions of their users."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.api.exceptions import error_body, flatten_fields
from sessions_app.api.serializers_imports import (
    MAX_CONVERSATIONS,
    ConversationImportItemSerializer,
    ConversationImportResponseSerializer,
    ConversationImportSerializer,
)
from sessions_app.api.tenancy import TenantGenericAPIView
from sessions_app.errors import ApplicationError, InvalidInput
from sessions_app.models import ChatSession
from sessions_app.services.conversation_import import conversation_import


def _result(index: int, raw: Any, status: int, **values: Any) -> dict[str, Any]:
    conversation_id = raw.get("conversation_id") if isinstance(raw, dict) else None
    return {
        "index": index,
        "status": status,
        "conversation_id": conversation_id if isinstance(conversation_id, str) else None,
        "session_id": values.get("session_id"),
        "turns": values.get("turns", 0),
        "error": values.get("error"),
    }


class ConversationImportView(TenantGenericAPIView):
    queryset = ChatSession.objects.all()
    serializer_class = ConversationImportSerializer

    @extend_schema(
        summary="Import past conversations (OpenAI chat format, with timestamps)",
        description=(
            "Each conversation becomes an archived session of its user: a turn per user "
            "message and the assistant's reply, at the message's `timestamp`, so search and "
            "context use the time it was said. Idempotent per conversation and user "
            "(`conversation_id`). Each conversation is stored whole or not at all; a bad "
            "one is answered in its result (400, fields named within it) and the others are "
            "imported."
        ),
        request=ConversationImportSerializer,
        responses={
            200: ConversationImportResponseSerializer,
            400: OpenApiResponse(description='invalid: the body is not {"conversations": [...]}'),
            413: OpenApiResponse(description="request_too_large: over the batch body limit"),
        },
    )
    def post(self, request: Request) -> Response:
        data = request.data
        unknown = sorted(set(data) - {"conversations"}) if isinstance(data, dict) else []
        if unknown:
            raise InvalidInput(fields={name: ["Unknown field."] for name in unknown})
        raw_items = data.get("conversations") if isinstance(data, dict) else None
        if not isinstance(raw_items, list) or not raw_items:
            raise InvalidInput(
                fields={"conversations": ["A list of at least one conversation is required."]}
            )
        if len(raw_items) > MAX_CONVERSATIONS:
            raise InvalidInput(
                fields={"conversations": [f"At most {MAX_CONVERSATIONS} per request."]}
            )
        return Response({"results": [self._one(i, raw) for i, raw in enumerate(raw_items)]})

    def _one(self, index: int, raw: Any) -> dict[str, Any]:
        try:
            if not isinstance(raw, dict):
                raise InvalidInput(fields={"non_field_errors": ["Must be a JSON object."]})
            serializer = ConversationImportItemSerializer(data=raw)
            try:
                serializer.is_valid(raise_exception=True)
            except serializers.ValidationError as exc:
                raise InvalidInput(fields=flatten_fields(exc.detail)) from exc
            draft = ConversationImportItemSerializer.draft(serializer.validated_data)
            imported = conversation_import(tenant=self.tenant, draft=draft)
        except ApplicationError as exc:
            error = error_body(exc.code, exc.message, exc.fields, **exc.extra)["error"]
            return _result(index, raw, exc.status, error=error)
        return _result(
            index,
            raw,
            201 if imported.created else 200,
            session_id=imported.session.pk,
            turns=imported.turns,
        )
