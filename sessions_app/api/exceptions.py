"""The one DRF exception handler: every error leaves in the documented JSON shape."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.db import DataError, IntegrityError
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_default_handler

from config.database_errors import DATABASE_CONNECTION_ERRORS
from sessions_app.errors import ApplicationError, ErrorCode

logger = logging.getLogger(__name__)

# A lost database connection (a restart, a failover) answers 503 with this Retry-After.
DATABASE_RETRY_AFTER_SECONDS = 5


def error_body(
    code: str, message: str, fields: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    # str(): an ErrorCode member becomes its plain value, which every renderer can write
    # (the schema view's YAML renderer cannot represent the enum).
    return {"error": {"code": str(code), "message": message, "fields": fields or {}, **extra}}


def error_response(
    status: int,
    code: str,
    message: str,
    fields: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> Response:
    return Response(error_body(code, message, fields, **extra), status=status, headers=headers)


def json_error(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> JsonResponse:
    """For middleware, which runs outside DRF."""
    return JsonResponse(error_body(code, message), status=status, headers=headers)


def database_unavailable_json() -> JsonResponse:
    """The 503 of a lost database connection, for middleware (outside DRF)."""
    return json_error(
        503,
        ErrorCode.DEPENDENCY_DOWN,
        "The database is unavailable.",
        headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)},
    )


def flatten_fields(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested error dicts/lists become {"steps.0.input_tokens": ["..."]}."""
    out: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if key == "non_field_errors":
                # An error about a nested object or list as a whole names that object.
                name = prefix or "non_field_errors"
            out.update(flatten_fields(value, name))
    elif isinstance(detail, list):
        if all(not isinstance(item, (dict, list)) for item in detail):
            out[prefix or "non_field_errors"] = [str(item) for item in detail]
        else:
            for index, item in enumerate(detail):
                out.update(flatten_fields(item, f"{prefix}.{index}" if prefix else str(index)))
    else:
        out[prefix or "non_field_errors"] = [str(detail)]
    return out


_DRF_CODES: list[tuple[type[Exception], int, ErrorCode]] = [
    (drf.ParseError, 400, ErrorCode.MALFORMED_JSON),
    (drf.NotAuthenticated, 401, ErrorCode.NOT_AUTHENTICATED),
    (drf.AuthenticationFailed, 401, ErrorCode.AUTHENTICATION_FAILED),
    (drf.PermissionDenied, 403, ErrorCode.PERMISSION_DENIED),
    (drf.NotFound, 404, ErrorCode.NOT_FOUND),
    (drf.MethodNotAllowed, 405, ErrorCode.METHOD_NOT_ALLOWED),
    (drf.UnsupportedMediaType, 415, ErrorCode.UNSUPPORTED_MEDIA_TYPE),
    (drf.Throttled, 429, ErrorCode.RATE_LIMITED),
]


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ApplicationError):
        return error_response(
            exc.status, exc.code, exc.message, exc.fields, headers=exc.headers, **exc.extra
        )
    if isinstance(exc, drf.ValidationError):
        fields = flatten_fields(exc.detail)
        return error_response(400, ErrorCode.INVALID, "The request is invalid.", fields)
    if isinstance(exc, RequestDataTooBig):
        return error_response(413, ErrorCode.REQUEST_TOO_LARGE, "The request body is too large.")
    if isinstance(exc, Http404):
        return error_response(404, ErrorCode.NOT_FOUND, "Not found.")
    if isinstance(exc, PermissionDenied):
        return error_response(403, ErrorCode.PERMISSION_DENIED, "Permission denied.")
    for exc_type, status, code in _DRF_CODES:
        if isinstance(exc, exc_type):
            response = drf_default_handler(exc, context)
            headers = {}
            if response is not None:
                for name in ("Retry-After", "WWW-Authenticate", "Allow"):
                    if name in response:
                        headers[name] = response[name]
            detail = getattr(exc, "detail", str(exc))
            return error_response(status, code, str(detail), headers=headers)
    if isinstance(exc, drf.APIException):
        return error_response(exc.status_code, str(exc.default_code), str(exc.detail))
    if isinstance(exc, DataError):
        # The edge (parser, serializer limits) should have refused the value; this is the
        # net under it, so a value PostgreSQL rejects is the client's 400, not a 500.
        logger.warning("data error answered as 400: %s", exc)
        return error_response(
            400, ErrorCode.INVALID, "A value in this request cannot be stored or compared."
        )
    if isinstance(exc, IntegrityError):
        logger.warning("integrity error answered as 409: %s", exc)
        return error_response(409, ErrorCode.CONFLICT, "The request conflicts with stored data.")
    if isinstance(exc, DATABASE_CONNECTION_ERRORS):
        logger.exception("database unavailable")
        return error_response(
            503,
            ErrorCode.DEPENDENCY_DOWN,
            "The database is unavailable.",
            headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)},
        )
    return None
