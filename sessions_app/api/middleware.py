"""Middleware at the API's edge: a request id on every response and log line, the body-size
limit, and every error under /api/ in the JSON error shape (never Django's HTML pages)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

from config.database_errors import DATABASE_CONNECTION_ERRORS
from config.request_log import accept_or_generate, request_id_var
from sessions_app.api.exceptions import database_unavailable_json, error_body, json_error
from sessions_app.errors import ErrorCode

logger = logging.getLogger("engram.api")

REQUEST_ID_HEADER = "X-Request-ID"
# Where every error leaves as JSON in the error shape: the REST API and the OTLP receiver
# (/v1/traces, whose clients are exporters reading JSON); MCP's endpoint also gets a JSON
# 500 for an exception that escaped it.
JSON_PREFIXES = ("/api/", "/v1/")
EXCEPTION_PREFIXES = (*JSON_PREFIXES, "/mcp/")

# Error codes for error responses that Django (not our handler) produced.
_STATUS_CODES: dict[int, ErrorCode] = {
    400: ErrorCode.INVALID,
    401: ErrorCode.NOT_AUTHENTICATED,
    403: ErrorCode.PERMISSION_DENIED,
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.METHOD_NOT_ALLOWED,
    413: ErrorCode.REQUEST_TOO_LARGE,
    415: ErrorCode.UNSUPPORTED_MEDIA_TYPE,
    429: ErrorCode.RATE_LIMITED,
}
_MESSAGES: dict[int, str] = {
    404: "No API route matches this path and method.",
    405: "This method is not allowed on this route.",
}


def _is_json(response: HttpResponse) -> bool:
    return (response.get("Content-Type") or "").startswith("application/json")


class RequestIdMiddleware:
    """Takes the client's `X-Request-ID` when sane, else makes one; it is set for the log
    lines of this request and returned on the response. Outermost, so every response has it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = accept_or_generate(request.headers.get(REQUEST_ID_HEADER))
        request.request_id = request_id  # type: ignore[attr-defined]  # set at run time; the stubs do not declare it
        # Not reset on the way out: Django logs a 4xx/5xx ("Not Found: …") after the
        # middleware chain returns, and that line must carry the id too. The next request
        # on this thread sets its own.
        request_id_var.set(request_id)
        response = self.get_response(request)
        response[REQUEST_ID_HEADER] = request_id
        return response


class ApiErrorMiddleware:
    """Every error under /api/ and /v1/ leaves as JSON in the error shape.

    DRF views already answer their errors so; this covers what happens outside them: no
    route matched (Django's 404 page, the technical one under DEBUG), a method on a non-DRF
    view, an exception that escaped a view (500: logged with its traceback, the client gets
    only the request id; a lost database connection is a 503 with Retry-After, as in DRF
    views), and NUL characters in query parameters, which PostgreSQL cannot store or
    compare in text. Pages outside /api/ refuse NUL in a query parameter too (a
    plain 400): the admin's changelists filter by any field named in the query string
    (`/admin/…/?user_id=%00` would reach PostgreSQL and fail as a 500)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        bad = [
            key
            for key, values in request.GET.lists()
            if "\x00" in key or any("\x00" in value for value in values)
        ]
        if not request.path.startswith(JSON_PREFIXES):
            if bad:
                return HttpResponseBadRequest(
                    "Query parameters cannot contain NUL characters.", content_type="text/plain"
                )
            return self.get_response(request)
        if any(segment in {".", ".."} for segment in request.path.split("/")):
            # Dot segments are a client that did not normalise its URL; no route has them
            # (an MPN path parameter would otherwise swallow "../../x").
            return self._json_instead(request, 404, None)
        if bad:
            return JsonResponse(
                error_body(
                    ErrorCode.INVALID,
                    "Query parameters cannot contain NUL characters.",
                    {name.replace("\x00", "\\u0000"): ["NUL is not allowed."] for name in bad},
                ),
                status=400,
            )
        response = self.get_response(request)
        if response.status_code >= 400 and not _is_json(response):
            return self._json_instead(request, response.status_code, response)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not request.path.startswith(EXCEPTION_PREFIXES):
            return None
        if isinstance(exception, DATABASE_CONNECTION_ERRORS):
            logger.warning(
                "database unavailable on %s %s", request.method, request.path, exc_info=exception
            )
            return database_unavailable_json()
        logger.error("unhandled error on %s %s", request.method, request.path, exc_info=exception)
        return self._json_instead(request, 500, None)

    def _json_instead(
        self, request: HttpRequest, status: int, original: HttpResponse | None
    ) -> HttpResponse:
        request_id = getattr(request, "request_id", request_id_var.get())
        if status >= 500:
            body = error_body(
                ErrorCode.SERVER_ERROR,
                "The server failed to answer this request; it is logged under the request id.",
                request_id=request_id,
            )
        else:
            code = _STATUS_CODES.get(status, ErrorCode.INVALID)
            body = error_body(code, _MESSAGES.get(status, "The request was refused."))
        response = JsonResponse(body, status=status)
        if original is not None:
            for header in ("Allow", "Retry-After", "WWW-Authenticate"):
                if header in original:
                    response[header] = original[header]
        return response


# Routes that carry many turns in one body, with their own, larger limit.
BATCH_PATH_SUFFIXES = ("/turns/batch", "/conversations/import")


class BodySizeLimitMiddleware:
    """DRF's parsers read the stream directly, past Django's DATA_UPLOAD_MAX_MEMORY_SIZE
    check; this answers 413 in the API's error shape from the Content-Length alone. The
    batch and import routes carry many turns and have their own, larger limit."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = (
            settings.ENGRAM_TURN_BATCH_MAX_BODY_BYTES
            if request.path.endswith(BATCH_PATH_SUFFIXES)
            else min(settings.ENGRAM_MAX_BODY_BYTES, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        )
        raw = request.META.get("CONTENT_LENGTH") or "0"
        try:
            length = int(raw)
        except ValueError:
            return json_error(400, ErrorCode.INVALID, "Content-Length is not a number.")
        if limit is not None and length > limit:
            return json_error(
                413, ErrorCode.REQUEST_TOO_LARGE, f"The request body exceeds {limit} bytes."
            )
        return self.get_response(request)
