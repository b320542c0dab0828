"""Conditional requests: the `If-Match` header read at the edge, the `ETag` header set."""

from __future__ import annotations

import re

from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.errors import InvalidInput

_ENTITY_TAG = re.compile(r'(?:W/)?"[\x21\x23-\x7e\x80-\xff]*"')


def parse_if_match(request: Request) -> list[str] | None:
    """The If-Match header as a list of entity tags (quoted, as sent) or `["*"]`; None
    without the header. A value that is not `*` or a comma-separated list of quoted tags
    (a bare `abc`, an empty header) is a 400 naming the header, not a silent no-match."""
    raw = request.headers.get("If-Match")
    if raw is None:
        return None
    if raw.strip() == "*":
        return ["*"]
    tags = [part.strip() for part in raw.split(",")]
    if not tags or not all(_ENTITY_TAG.fullmatch(tag) for tag in tags):
        raise InvalidInput(
            "If-Match is not a list of entity tags.",
            fields={"If-Match": ['`*` or quoted entity tags, e.g. "3f9a…" as ETag gave it.']},
        )
    return tags


def with_etag(response: Response, etag: str) -> Response:
    response["ETag"] = etag
    return response
