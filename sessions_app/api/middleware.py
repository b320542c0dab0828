"""Request-size limit for the API, checked before anything reads the body."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from sessions_app.api.exceptions import json_error
from sessions_app.errors import ErrorCode

BATCH_PATH_SUFFIX = "/turns/batch"


class BodySizeLimitMiddleware:
    """DRF's parsers read the stream directly, past Django's DATA_UPLOAD_MAX_MEMORY_SIZE
    check; this answers 413 in the API's error shape from the Content-Length alone. The
    batch route carries many turns and has its own, larger limit."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = (
            settings.ENGRAM_TURN_BATCH_MAX_BODY_BYTES
            if request.path.endswith(BATCH_PATH_SUFFIX)
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
