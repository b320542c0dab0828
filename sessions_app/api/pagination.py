"""Cursor pagination that refuses what it cannot use instead of ignoring it: a bad
`page_size` or `cursor` is a 400 naming the parameter (DRF would fall back to the default
page size, and answer a bad cursor with 404)."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request


class CreatedCursorPagination(CursorPagination):
    """Cursor pagination, stable under inserts; newest first unless a view says otherwise."""

    ordering = "-created_at"
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
        try:
            return super().decode_cursor(request)
        except NotFound as exc:
            raise ValidationError({self.cursor_query_param: ["Invalid cursor."]}) from exc

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"].update(minimum=1, maximum=self.max_page_size)
        return parameters
