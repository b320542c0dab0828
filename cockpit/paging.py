"""Pages without a COUNT: read one row more than the page to know if there is a next
one. On tables that grow with traffic a full COUNT costs more than the page itself."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db.models import QuerySet

T = TypeVar("T")
MAX_PAGE = 200  # deep offsets cost O(offset); past this, narrow the filter instead


@dataclass(frozen=True)
class Page(Generic[T]):
    rows: Sequence[T]
    number: int
    has_next: bool

    @property
    def has_previous(self) -> bool:
        return self.number > 1


def page_number(value: Any) -> int:
    try:
        return min(max(1, int(value)), MAX_PAGE)
    except (TypeError, ValueError):
        return 1


def page_of(rows: QuerySet[Any], number: int, size: int) -> Page[Any]:
    start = (number - 1) * size
    items = list(rows[start : start + size + 1])
    return Page(items[:size], number, len(items) > size)
