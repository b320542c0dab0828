"""A CSV renderer for exports (views hand it ready text; anything else, an error body,
is rendered as JSON by the view, see `CsvExportMixin`), and `jsonable`, a body as the
JSON renderer sends it."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rest_framework.renderers import BaseRenderer, JSONRenderer

# Spreadsheets run cells that start with these as formulas; prefix them with a quote.
_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value: Any) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_PREFIXES) else text


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([csv_safe(v) for v in row])
    return buffer.getvalue()


class CsvRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        if isinstance(data, str):
            return data.encode(self.charset)
        return JSONRenderer().render(data)


def jsonable(data: Any) -> Any:
    """The body exactly as a client receives it (UUIDs, decimals and datetimes as the
    JSON renderer writes them), so a stored replay is byte-for-byte the same and a
    non-HTTP transport (the MCP tools) answers what the REST route would."""
    return json.loads(JSONRenderer().render(data))
