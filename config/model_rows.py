"""Model instances from the rows of a hand-written SELECT: the converters the ORM would
apply to each column (JSON text to Python, …) worked out once per model and field list,
instead of per query as a raw queryset does. Used by the turn log's session lock read
and the search's hit rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Field, Model

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
