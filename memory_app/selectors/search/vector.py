"""The vector step: the k nearest memories under a search's filters.

HNSW over `embedding::halfvec(N)` with `hnsw.iterative_scan = relaxed_order` (SET LOCAL,
the pool's statement only: memory_app.selectors.search.pool), so the hard filters
applied after the index scan never starve the result; the pool's MATERIALIZED CTE then
restores exact distance order. A tenant-wide search looks in each visibility branch on
its own: the public memories in their own HNSW graph, the actor's own and those shared
with the actor exactly (a few hundred rows, from indexes), merged by distance; one OR
filter over the whole graph would leave the walk among mostly invisible neighbours. A
search of one user's memories orders them exactly, read from the covering (tenant,
user) index.
"""

from __future__ import annotations

from psycopg import sql

from memory_app.models import EMBEDDING_DIMENSIONS
from memory_app.selectors.search.filters import SearchWhere, merged_branches

# HNSW candidate list: above pgvector's default (40), which under the tenant + visibility
# filter misses some of the nearest visible rows; under a selective filter the iterative
# scan visits that many tuples anyway. docs/decisions/vector-index-halfvec-hnsw.md.
EF_SEARCH = 200

_HALFVEC = sql.SQL("halfvec({})").format(sql.Literal(EMBEDDING_DIMENSIONS))
_DISTANCE = sql.SQL("m.embedding::{halfvec} <=> %(q)s::{halfvec}").format(halfvec=_HALFVEC)
_BRANCH = sql.SQL(
    "SELECT m.id, {distance} AS distance, m.embedding FROM memory m"
    " WHERE {scope} AND {branch} ORDER BY {order} LIMIT %(k)s"
)
# A branch of one owner's rows is ordered by the distance plus 0: an order no index
# provides, so every plan of it, one made for this run's values or a generic one, reads
# the owner's rows and sorts them exactly; the HNSW graph, whose filtered walk may return
# fewer rows than asked, never serves it.
_EXACT_ORDER = sql.SQL("({}) + 0")
# The owner's rows again (their user_id is `%(owner)s`), as a range whose bounds are
# InitPlans: unknown when planning, so the planner estimates it at 0.5 % of the owner's
# rows and reads them from an index that keys the user, the covering one (embeddings
# included) when the visibility map allows. Where one user holds most of the table (one
# agent's tenant, the LongMemEval pool) it would otherwise cost a sequential scan lower,
# which fetches every row's embedding from TOAST, several times slower than the index.
# An index without the user among its keys (tenant, created_at) gains nothing from it.
_OWNER_ROWS = sql.SQL("m.user_id BETWEEN (SELECT %(owner)s) AND (SELECT %(owner)s)")
_NEAREST = sql.SQL("SELECT n.id, n.distance, {cosine} AS semantic FROM ({merged}) AS n")


def cosine_sql(alias: str) -> sql.Composable:
    """The full-precision cosine of row `alias`'s embedding and the query (`%(q)s`)."""
    return sql.SQL("1 - ({} <=> %(q)s::vector)").format(sql.Identifier(alias, "embedding"))


def passage_cosine_sql(alias: str) -> sql.Composable:
    """The best full-precision cosine of the query (`%(q)s`) and a passage of row
    `alias` (memory_app.passage_vectors); NULL for a memory without passages. Read by
    the unique (memory, ordinal) index: a few rows a memory."""
    return sql.SQL(
        "(SELECT max(1 - (p.embedding <=> %(q)s::vector)) FROM memory_passage p"
        " WHERE p.memory_id = {})"
    ).format(sql.Identifier(alias, "id"))


def nearest_sql(where: SearchWhere) -> sql.Composable:
    """The vector top-k under `where` (id, halfvec distance, full-precision cosine): one
    ORDER BY … LIMIT per visibility branch, each planned on its own (HNSW, the partial
    HNSW of public memories, or an exact order of a btree's or GIN's few rows), merged by
    distance. Branches are disjoint, so no row comes twice.

    The cosine is computed on the k rows left, from the embedding the branch already read:
    in an index-only scan of the covering (tenant, user) index, from the index, not from
    the row's TOAST. In the branch's own SELECT list, PostgreSQL would compute it below
    the sort, for every row of the user."""
    selects = [
        _BRANCH.format(
            distance=_DISTANCE,
            scope=where.scope,
            branch=_owner_rows(where, branch),
            order=_DISTANCE
            if where.branch_owner(branch) is None
            else _EXACT_ORDER.format(_DISTANCE),
        )
        for branch in where.branches
    ]
    merged = merged_branches(selects, order=sql.SQL("distance"))
    return _NEAREST.format(cosine=cosine_sql("n"), merged=merged)


def _owner_rows(where: SearchWhere, branch: sql.Composable) -> sql.Composable:
    """`branch`, and for a branch of one owner's rows, read from the covering index."""
    if where.branch_owner(branch) is None:
        return branch
    return sql.SQL("{} AND {}").format(branch, _OWNER_ROWS)
