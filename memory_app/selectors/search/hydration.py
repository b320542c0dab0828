"""The hits' rows: whole Memory instances for the hits returned only, not for the pool
(three times larger), in one hand-written SELECT, prepared on the connection
(config.prepared_statements: planning it took about three times its run), read into
instances by `Model.from_db` with the fields' own converters. The ORM's in_bulk()
compiles its query for a model of 30 fields at every call, and raw() resolves its
columns to fields at every call: each cost more than running the statement.
tests/memory_app/test_search_hydration.py holds the instances to the ORM's.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import cache
from typing import Any

from django.db import connection
from psycopg import sql

from config.prepared_statements import prepared_statement
from memory_app.models import Memory

# A hit's columns: all but the two tsvectors and the embedding, which no caller reads
# from a search hit (a deferred field still loads on access).
HIT_FIELDS = tuple(
    field
    for field in Memory._meta.concrete_fields
    if field.column and field.name not in ("search_vector", "lexical_vector", "embedding")
)
HIT_COLUMNS = sql.SQL(", ").join([sql.Identifier(str(field.column)) for field in HIT_FIELDS])

# Each row brings its edges to other memories (`search_edges`: [type, target id] pairs,
# by edge id; not its version edges), which the response lists
# (memory_app.api.serializers_memory, `memory_edges`): a prefetch of `relations` would be one
# more round trip and Django's per-instance bookkeeping for every hit.
HIT_ROWS_SQL = sql.SQL(
    "SELECT {columns}, coalesce(("
    "SELECT json_agg(json_build_array(r.type, r.target_id) ORDER BY r.id)"
    " FROM memory_relation r WHERE r.source_id = memory.id AND r.target_version IS NULL"
    "), '[]') AS search_edges FROM memory WHERE id = ANY(%(ids)s::uuid[])"
).format(columns=HIT_COLUMNS)

Converter = Callable[[Any], Any]


@cache
def _hit_message() -> sql.Composed:
    return prepared_statement(HIT_ROWS_SQL, prefix="engram_search_hits_").message()


@cache
def _converters() -> tuple[Converter | None, ...]:
    """Per hit column, what turns the value read into the field's (a JSON field's
    text into its object), or None where the value is the field's as read."""
    return tuple(_converter(field) for field in HIT_FIELDS)


def _converter(field: Any) -> Converter | None:
    column = field.get_col(Memory._meta.db_table)
    steps = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
    if not steps:
        return None

    def convert(value: Any) -> Any:
        for step in steps:
            value = step(value, column, connection)
        return value

    return convert


def hit_rows(ids: list[uuid.UUID]) -> dict[uuid.UUID, Memory]:
    """The memories of `ids` by id, each with `search_edges`."""
    with connection.cursor() as cursor:
        cursor.execute(_hit_message(), {"ids": ids})
        cursor.nextset()  # past the DO's result
        rows = cursor.fetchall()
    names = [field.attname for field in HIT_FIELDS]
    converters = _converters()
    memories = {}
    for row in rows:
        values = [
            value if convert is None else convert(value)
            for convert, value in zip(converters, row, strict=False)
        ]
        memory = Memory.from_db(connection.alias, names, values)
        memory.search_edges = row[-1]  # type: ignore[attr-defined]  # read by the serializer
        memories[memory.pk] = memory
    return memories
