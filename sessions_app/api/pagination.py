"""Cursor pagination that refuses what it cannot use instead of ignoring it: a bad
`page_size` or `cursor` is a 400 naming the parameter (DRF would fall back to the default
page size, and answer a bad cursor with 404).

A cursor is short text the schema describes exactly (`CURSOR_PATTERN`), so that every
cursor of that shape is one the API can follow: the offset among rows sharing the boundary
position, `f` (forward) or `r` (reverse), and the boundary position, an integer (the
microseconds since 1970 of a `created_at`, or the ordering's own integer, e.g. a turn
number). DRF's cursor (base64 of a query string holding the position's text) has no shape
a schema can state, and most strings of it fail to decode.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request
from rest_framework.utils.urls import replace_query_param

# Offset (DRF caps it at OFFSET_CUTOFF = 1000), direction, optional position (16 digits:
# microseconds since 1970 reach the year 2286).
CURSOR_PATTERN = r"^[0-9]{1,4}[fr][0-9]{0,16}$"
_CURSOR_PARTS = re.compile(r"([0-9]{1,4})([fr])([0-9]{0,16})")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
CURSOR_DESCRIPTION = (
    "Where the page starts: the `cursor` of a `next` or `previous` link. Any value of the "
    "pattern is followed (a position past the data gives an empty page)."
)


class CreatedCursorPagination(CursorPagination):
    """Cursor pagination, stable under inserts; newest first unless a view says otherwise.
    `ordered_by_time`: the ordering field is a datetime (else an integer)."""

    ordering = "-created_at"
    ordered_by_time = True
    page_size_query_param = "page_size"
    max_page_size = 500

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return int(self.page_size or 50)
        if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= self.max_page_size:
            raise ValidationError(
                {self.page_size_query_param: [f"An integer from 1 to {self.max_page_size}."]}
            )
        return int(raw)

    def decode_cursor(self, request: Request) -> Cursor | None:
        encoded = request.query_params.get(self.cursor_query_param)
        if encoded is None:
            return None
        parts = _CURSOR_PARTS.fullmatch(encoded)
        if parts is None:
            raise ValidationError({self.cursor_query_param: ["Invalid cursor."]})
        offset, direction, position = parts.groups()
        return Cursor(
            offset=min(int(offset), self.offset_cutoff),
            reverse=direction == "r",
            # DRF's stubs say int; DRF itself holds the position's text (str of the value).
            position=self._position_value(position) if position else None,  # type: ignore[arg-type]
        )

    def encode_cursor(self, cursor: Cursor) -> str:
        offset = min(int(cursor.offset), self.offset_cutoff)
        direction = "r" if cursor.reverse else "f"
        position = "" if cursor.position is None else self._position_digits(str(cursor.position))
        return replace_query_param(
            self.base_url or "", self.cursor_query_param, f"{offset}{direction}{position}"
        )

    def _position_value(self, digits: str) -> str:
        """The text DRF filters and compares with (`str()` of the ordering field's value)."""
        if self.ordered_by_time:
            return str(_EPOCH + timedelta(microseconds=int(digits)))
        return str(int(digits))

    def _position_digits(self, position: str) -> str:
        if self.ordered_by_time:
            moment = datetime.fromisoformat(position)
            return str((moment - _EPOCH) // timedelta(microseconds=1))
        return str(int(position))

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"].update(minimum=1, maximum=self.max_page_size)
            if parameter["name"] == self.cursor_query_param:
                parameter["schema"].update(pattern=CURSOR_PATTERN)
                parameter["description"] = CURSOR_DESCRIPTION
        return parameters
