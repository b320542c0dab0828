"""Conditional requests: the `If-Match` header read at the edge, the `ETag` header set,
and both as the OpenAPI schema declares them."""

from __future__ import annotations

import re

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.errors import InvalidInput

IF_MATCH_HEADER = "If-Match"
_ENTITY_TAG = re.compile(r'(?:W/)?"[\x21\x23-\x7e\x80-\xff]*"')


def if_match_parse(raw: str | None, *, field: str = IF_MATCH_HEADER) -> list[str] | None:
    """An If-Match value as a list of entity tags (quoted, as sent) or `["*"]`; None for
    None (no header). A value that is not `*` or a comma-separated list of quoted tags
    (a bare `abc`, an empty value) is a 400 naming `field` (the header, or the MCP
    argument that carries it), not a silent no-match."""
    if raw is None:
        return None
    if raw.strip() == "*":
        return ["*"]
    tags = [part.strip() for part in raw.split(",")]
    if not tags or not all(_ENTITY_TAG.fullmatch(tag) for tag in tags):
        raise InvalidInput(
            "If-Match is not a list of entity tags.",
            fields={field: ['`*` or quoted entity tags, e.g. "3f9a…" as ETag gave it.']},
        )
    return tags


def parse_if_match(request: Request) -> list[str] | None:
    """The request's If-Match header, parsed by `if_match_parse`."""
    return if_match_parse(request.headers.get(IF_MATCH_HEADER))


def with_etag(response: Response, etag: str) -> Response:
    response["ETag"] = etag
    return response


def etag_parameter(
    *statuses: int,
    description: str = "The entity tag of `state` (as `state_etag`): send it as If-Match.",
) -> OpenApiParameter:
    """The `ETag` response header of `statuses`: the state's entity tag."""
    return OpenApiParameter(
        "ETag",
        OpenApiTypes.STR,
        location=OpenApiParameter.HEADER,
        response=list(statuses),
        description=description,
    )


def if_match_parameter(description: str) -> OpenApiParameter:
    """The `If-Match` request header, described for its route."""
    return OpenApiParameter(
        IF_MATCH_HEADER, OpenApiTypes.STR, location=OpenApiParameter.HEADER, description=description
    )
