"""The hits' rows: whole Memory instances for the hits returned only, not for the pool
(three times larger), in one hand-written SELECT, prepared on the connection
(config.prepared_statements: planning it took about three times its run), read into
instances by `Model.from_db` with the fields' own converters, their dates by psycopg's
compiled loader (config.model_rows). The ORM's in_bulk() compiles its query for a model
of 30 fields at every call, and raw() resolves its columns to fields at every call: each
cost more than running the statement. tests/memory_app/test_search_hydration.py holds
the instances to the ORM's.
"""

from __future__ import annotations

import uuid
from functools import cache

from django.db import connection
from psycopg import sql

from config.model_rows import RowReader, load_timestamps_compiled, row_reader
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


@cache
def _hit_message() -> sql.Composed:
    return prepared_statement(HIT_ROWS_SQL, prefix="engram_search_hits_").message()


@cache
def _reader() -> RowReader:
    return row_reader(Memory, HIT_FIELDS, Memory._meta.db_table)


def hit_rows(ids: list[uuid.UUID]) -> dict[uuid.UUID, Memory]:
    """The memories of `ids` by id, each with `search_edges`."""
    with connection.cursor() as cursor:
        load_timestamps_compiled(cursor)
        cursor.execute(_hit_message(), {"ids": ids})
        cursor.nextset()  # past the DO's result
        rows = cursor.fetchall()
    reader = _reader()
    memories = {}
    for row in rows:
        memory = reader.instance(row)
        memory.search_edges = row[-1]  # read by the serializer
        memories[memory.pk] = memory
    return memories
