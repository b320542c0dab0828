"""The hits' rows: whole Memory instances for the hits returned only, not for the pool
(three times larger), in one hand-written SELECT. The ORM's in_bulk() compiles its query
for a model of 30 fields at every call, which costs more than running it.
"""

from __future__ import annotations

import uuid

from psycopg import sql

from memory_app.models import Memory

# A hit's columns: all but the two tsvectors and the embedding, which no caller reads
# from a search hit (a deferred field still loads on access).
HIT_COLUMNS = sql.SQL(", ").join(
    sql.Identifier(field.column)
    for field in Memory._meta.concrete_fields
    if field.column and field.name not in ("search_vector", "lexical_vector", "embedding")
)

# Each row brings its edges to other memories (`search_edges`: [type, target id] pairs,
# by edge id; not its version edges), which the response lists
# (memory_app.api.serializers_memory, `memory_edges`): a prefetch of `relations` would be one
# more round trip and Django's per-instance bookkeeping for every hit.
HIT_ROWS_SQL = sql.SQL(
    "SELECT {columns}, coalesce(("
    "SELECT json_agg(json_build_array(r.type, r.target_id) ORDER BY r.id)"
    " FROM memory_relation r WHERE r.source_id = memory.id AND r.target_version IS NULL"
    "), '[]') AS search_edges FROM memory WHERE id = ANY(%s::uuid[])"
).format(columns=HIT_COLUMNS)


def hit_rows(ids: list[uuid.UUID]) -> dict[uuid.UUID, Memory]:
    """The memories of `ids` by id, each with `search_edges`."""
    return {row.pk: row for row in Memory.objects.raw(HIT_ROWS_SQL, [ids])}  # type: ignore[arg-type]  # psycopg runs a Composed; Django's stubs say str
