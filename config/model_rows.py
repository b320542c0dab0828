"""Model instances from the rows of a hand-written SELECT: the converters the ORM would
apply to each column (JSON text to Python, …) worked out once per model and field list,
instead of per query as a raw queryset does. Used by the turn log's session lock read
and the search's hit rows. And timestamps read by psycopg's compiled loader on the
cursors of a read that loads many (`load_timestamps_compiled`).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Field, Model
from psycopg.types.datetime import TimestamptzLoader

Converter = Callable[[Any, Any, Any], Any]


@dataclass(frozen=True)
class RowReader:
    """How a row of `fields`' columns, in that order, becomes an instance of `model`."""

    model: type[Model]
    attnames: tuple[str, ...]
    # (position, the converters in order, the column expression they are given)
    converters: tuple[tuple[int, tuple[Converter, ...], Any], ...]

    def instance(self, values: Sequence[Any]) -> Any:
        """The instance the ORM would read from these column values (more values than
        fields: the rest are ignored; fewer fields than the model has: the others are
        deferred)."""
        converted = list(values[: len(self.attnames)])
        for position, functions, column in self.converters:
            for convert in functions:
                converted[position] = convert(converted[position], column, connection)
        return self.model.from_db(connection.alias, list(self.attnames), converted)


def row_reader(model: type[Model], fields: Sequence[Field[Any, Any]], alias: str) -> RowReader:
    """The reader of rows whose columns are `fields`' (selected from `alias`)."""
    converters = []
    for position, field in enumerate(fields):
        column = field.get_col(alias)
        found = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
        if found:
            converters.append((position, tuple(found), column))
    return RowReader(model, tuple(field.attname for field in fields), tuple(converters))


def load_timestamps_compiled(cursor: Any) -> None:
    """Load `cursor`'s timestamptz columns with psycopg's own loader, which psycopg swaps
    for its compiled one, instead of Django's: Django's subclasses the pure-Python
    loader to set each value's tzinfo to the connection's time zone, and a search reads
    many dates (two a pool candidate, several a hit). Where Django's zone is
    `datetime.timezone.utc` (USE_TZ and no database TIME_ZONE: the session's TimeZone is
    UTC) psycopg's gives the same instants with the same tzinfo; otherwise Django's
    stays. `cursor`: a cursor of `connection` (Django's wrapper or psycopg's)."""
    if connection.timezone is not datetime.UTC:
        return
    getattr(cursor, "cursor", cursor).adapters.register_loader("timestamptz", TimestamptzLoader)
