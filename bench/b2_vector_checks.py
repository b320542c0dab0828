"""B2's in-process checks of the search's vector step: its recall@10 against an exact
scan under the same filters, and its plan (bench.b2_memory_search reports both beside
the HTTP latencies)."""

from __future__ import annotations

import statistics
import time
from typing import Any

K = 10


def _shape_where(tenant: Any, user: str, shape: str) -> tuple[Any, dict[str, Any]]:
    """The search's own filters (and their parameters) for `user` in `shape`: one user's
    memories ("user") or what the user sees in the tenant ("tenant")."""
    from memory_app.selectors.memories import Actor
    from memory_app.selectors.search import search_where

    return search_where(
        tenant=tenant,
        actor=Actor(user_id=user),
        user_id=user if shape == "user" else None,
        agent_id=None,
        types=None,
        tags=None,
    )


def _exact_top(tenant: Any, user: str, shape: str, vector: list[float]) -> list[Any]:
    from django.db import connection, transaction
    from psycopg import sql

    filters, params = _shape_where(tenant, user, shape)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_indexscan = off")  # belt and braces: no HNSW
        exact = sql.SQL(
            "SELECT m.id FROM memory m WHERE {} ORDER BY m.embedding <=> %(q)s::vector, m.id"
            " LIMIT %(k)s"
        ).format(filters.sql)
        cursor.execute(exact, {**params, "q": str(vector), "k": K})
        return [row[0] for row in cursor.fetchall()]


def vector_recall(
    tenant: Any,
    queries: list[str],
    users: list[str],
    vectors: list[list[float]],
    shapes: list[str],
) -> dict[str, dict[str, float]]:
    """recall@10 per shape, with the vector step's in-process time (median ms)."""
    from memory_app.selectors.memories import Actor
    from memory_app.selectors.search import memory_search

    out: dict[str, dict[str, float]] = {}
    for shape in shapes:
        hits = 0
        total = 0
        step_ms = []
        exact_ms = []
        for query, user, vector in zip(queries, users, vectors, strict=True):
            began = time.perf_counter()
            outcome = memory_search(
                tenant=tenant,
                actor=Actor(user_id=user),
                query=query,
                user_id=user if shape == "user" else None,
                limit=K,
                mode="vector",
                query_embedding=vector,
            )
            step_ms.append((time.perf_counter() - began) * 1000)
            began = time.perf_counter()
            exact = _exact_top(tenant, user, shape, vector)
            exact_ms.append((time.perf_counter() - began) * 1000)
            found = set(outcome.vector_ranking[:K])
            hits += len(found & set(exact))
            total += len(exact)
        out[shape] = {
            "recall_at_10": hits / total if total else float("nan"),
            "vector_search_ms_p50": statistics.median(step_ms),
            "exact_scan_ms_p50": statistics.median(exact_ms),
        }
    return out


def explain_vector_step(tenant: Any, user: str, shape: str, vector: list[float]) -> dict[str, Any]:
    """The plan of the search's vector step (same SQL and SET LOCALs), summarised."""
    from django.db import connection, transaction
    from psycopg import sql

    from memory_app.selectors.search.vector import EF_SEARCH, nearest_sql

    filters, params = _shape_where(tenant, user, shape)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cursor.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(EF_SEARCH)))
        cursor.execute(
            sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) {}").format(nearest_sql(filters)),
            {**params, "q": str(vector), "k": 30},
        )
        plan = cursor.fetchone()[0][0]

    def render(node: dict[str, Any]) -> str:
        """A node and what is under it: `A → B`, and `Append [x; y]` for branches."""
        name = node["Node Type"] + (f" on {node['Index Name']}" if "Index Name" in node else "")
        children = [render(child) for child in node.get("Plans", [])]
        if len(children) > 1:
            return f"{name} [{'; '.join(children)}]"
        return f"{name} → {children[0]}" if children else name

    return {"nodes": [render(plan["Plan"])], "execution_ms": round(plan["Execution Time"], 2)}
