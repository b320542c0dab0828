"""When what a memory tells began: its `valid_from`, else when it happened
(`occurred_at`), else when it was written (`created_at`).

One rule for every reading of a memory's time: supersession orders a subject's chain by
it (memory_app.services.supersession), the current-state weighting dates a successor by
it (memory_app.selectors.currency), and search dates a memory by it for the query's time
phrase, both the boost and the time-only search's filter (memory_app.selectors.search_time)
and the event a "before X" question is ordered by (memory_app.selectors.search.engine).
A memory without `valid_from` (a conversation turn, a fact written without one) is dated
by `occurred_at` when it has one.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from psycopg import sql

if TYPE_CHECKING:
    from memory_app.models import Memory


def validity_start(memory: Memory) -> datetime:
    """When what the memory states began: valid_from, else when it happened, else when it
    was written."""
    return began(memory.valid_from, memory.occurred_at, memory.created_at)


def began(valid_from: datetime | None, occurred_at: datetime | None, written: datetime) -> datetime:
    """The rule on its fields, for what is not a stored memory yet (a draft, written
    `written`)."""
    return valid_from or occurred_at or written


def validity_start_sql(alias: str) -> sql.Composed:
    """The rule in SQL, for the memory row named `alias` in the statement (a constant of
    the statement's own text, never a value)."""
    return sql.SQL("coalesce({0}.valid_from, {0}.occurred_at, {0}.created_at)").format(
        sql.SQL(alias)
    )
