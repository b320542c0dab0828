"""B2-memory: HNSW on vector(384) vs on embedding::halfvec(384), and iterative scans.

Run: `.venv/bin/python -m bench.memory_index_bench [rows]` (throwaway embedded PostgreSQL).
Rows are MiniLM embeddings of generated sentences plus noise (clustered like real text,
not uniform random). For each index: build time, size, p50 query latency and recall@10
against an exact full-precision scan; then a selective filter (one user, ~1% of rows)
with `hnsw.iterative_scan` off vs relaxed_order. Times are ratios within one run.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
import uuid
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

import django

django.setup()

import numpy as np  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.db.backends.utils import CursorWrapper  # noqa: E402

from memory_app.embedding import embed_texts  # noqa: E402
from tests.memory_app.retrieval_data import generate  # noqa: E402

QUERIES = 200
K = 10
INDEXES = {
    "vector": "CREATE INDEX bench_hnsw ON memory USING hnsw (embedding vector_cosine_ops) "
    "WITH (m = 32, ef_construction = 128)",
    "halfvec": "CREATE INDEX bench_hnsw ON memory USING hnsw "
    "((embedding::halfvec(384)) halfvec_cosine_ops) WITH (m = 32, ef_construction = 128)",
}
ORDER = {
    "vector": "embedding <=> %s::vector",
    "halfvec": "embedding::halfvec(384) <=> %s::halfvec(384)",
}


INSERT = (
    "INSERT INTO memory (id, tenant_id, user_id, agent_id, type, scope, content,"
    " summary, structured, content_hash, embedding, embedding_model, importance,"
    " confidence, tags, source, version, created_at, updated_at,"
    " last_accessed_at, access_count, decay_score, pinned, allowed_users,"
    " allowed_roles, thread_key, thread_context)"
    " VALUES (%s, %s, %s, '', 'fact', 'private', %s, '', '{}',"
    " %s, %s::vector, 'bench', 0.5, 1, '{}', 'external_data', 1, now(), now(),"
    " now(), 0, 1, false, '{}', '{}', '', '')"
)

# (build seconds, size bytes, p50 query seconds, mean recall@10, rows back by scan mode)
IndexFigures = tuple[float, int, float, float, dict[str, float]]


def _noisy(base: np.ndarray, rng: np.random.Generator, count: int) -> np.ndarray:
    """`count` unit vectors, each a random row of `base` plus noise."""
    picked = base[rng.integers(0, len(base), count)]
    vectors = picked + rng.normal(0, 0.6 / np.sqrt(384), (count, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def _sample_vectors(rows: int) -> tuple[np.ndarray, np.ndarray]:
    """(row vectors, query vectors): noisy copies of the MiniLM embeddings of the
    retrieval test data's facts and questions."""
    rng = np.random.default_rng(7)
    data = generate()
    texts = list(
        dict.fromkeys([f.statement for f in data.facts] + [q.text for q in data.questions])
    )
    base = np.array(embed_texts(texts), dtype=np.float32)
    noisy = _noisy(base, rng, rows)
    queries = _noisy(base, rng, QUERIES)
    return noisy, queries


def _insert_rows(cursor: CursorWrapper, noisy: np.ndarray) -> None:
    """One tenant's memories, one per vector, spread over 100 users, without the
    migrations' HNSW index (each index under test is built afterwards)."""
    rows = len(noisy)
    users = [f"user-{i}" for i in range(100)]
    cursor.execute("DROP INDEX IF EXISTS memory_embedding_hnsw")
    cursor.execute("INSERT INTO tenant (name, created_at) VALUES ('bench', now()) RETURNING id")
    tenant = cursor.fetchone()[0]
    started = time.perf_counter()
    batch = []
    for i, vector in enumerate(noisy):
        batch.append(
            (
                str(uuid.uuid4()),
                tenant,
                random.choice(users),
                f"row {i}",
                str(i),
                str(vector.tolist()),
            )
        )
        if len(batch) == 1000 or i == rows - 1:
            cursor.executemany(INSERT, batch)
            batch = []
    print(f"inserted {rows} rows in {time.perf_counter() - started:.1f}s")
    cursor.execute("ANALYZE memory")


def _exact_neighbours(cursor: CursorWrapper, qtexts: list[str]) -> list[set[Any]]:
    """Each query's true top K, from a full-precision sequential scan."""
    cursor.execute("SET enable_indexscan = off")
    cursor.execute("SET enable_bitmapscan = off")
    exact = []
    for q in qtexts:
        cursor.execute("SELECT id FROM memory ORDER BY embedding <=> %s::vector LIMIT %s", [q, K])
        exact.append({row[0] for row in cursor.fetchall()})
    cursor.execute("RESET enable_indexscan")
    cursor.execute("RESET enable_bitmapscan")
    return exact


def _query_index(
    cursor: CursorWrapper, name: str, qtexts: list[str], exact: list[set[Any]]
) -> tuple[float, float]:
    """(p50 latency in seconds, mean recall@K) of the queries through index `name`,
    after checking that the planner uses it."""
    latencies, recalls = [], []
    for q, truth in zip(qtexts, exact, strict=True):
        started = time.perf_counter()
        cursor.execute(
            f"SELECT id FROM memory ORDER BY {ORDER[name]} LIMIT %s",
            [q, K],
        )
        got = {row[0] for row in cursor.fetchall()}
        latencies.append(time.perf_counter() - started)
        recalls.append(len(got & truth) / K)
    cursor.execute(f"EXPLAIN SELECT id FROM memory ORDER BY {ORDER[name]} LIMIT 10",
                   [qtexts[0]])  # fmt: skip
    plan = " ".join(row[0] for row in cursor.fetchall())
    assert "bench_hnsw" in plan, plan
    return statistics.median(latencies), statistics.mean(recalls)


def _filtered_rows_back(cursor: CursorWrapper, name: str, qtexts: list[str]) -> dict[str, float]:
    """Mean rows back (of K) for one user's rows (~1%), iterative scan off vs relaxed."""
    filtered = {}
    for mode in ("off", "relaxed_order"):
        cursor.execute(f"SET hnsw.iterative_scan = {mode}")
        counts = []
        for q in qtexts[:50]:
            cursor.execute(
                f"SELECT id FROM memory WHERE user_id = 'user-7' ORDER BY {ORDER[name]} LIMIT %s",
                [q, K],
            )
            counts.append(len(cursor.fetchall()))
        filtered[mode] = statistics.mean(counts)
    cursor.execute("RESET hnsw.iterative_scan")
    return filtered


def _measure_index(
    cursor: CursorWrapper, name: str, ddl: str, qtexts: list[str], exact: list[set[Any]]
) -> IndexFigures:
    """Index `name` built with `ddl` (replacing the previous one), then queried."""
    cursor.execute("DROP INDEX IF EXISTS bench_hnsw")
    started = time.perf_counter()
    cursor.execute(ddl)
    build = time.perf_counter() - started
    cursor.execute("SELECT pg_relation_size('bench_hnsw')")
    size = cursor.fetchone()[0]
    p50, recall = _query_index(cursor, name, qtexts, exact)
    filtered = _filtered_rows_back(cursor, name, qtexts)
    return build, size, p50, recall, filtered


def _print_table(rows: int, results: dict[str, IndexFigures]) -> None:
    """Markdown table; build, size and p50 also as ratios to the vector index."""
    vector_build, vector_size, vector_p50, _, _ = results["vector"]
    print(f"\n{rows} rows x 384 dims, {QUERIES} queries, k={K}, m=32, ef_construction=128,"
          " ef_search=40\n")  # fmt: skip
    print("| index | build (x vector) | size MB | p50 query (x vector) | recall@10 |"
          " rows back, 1% filter, iterative off | … relaxed_order |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name, (build, size, p50, recall, filtered) in results.items():
        print(
            f"| {name} | {build:.2f}s ({build / vector_build:.2f}) | {size / 1e6:.1f} "
            f"({size / vector_size:.2f}) | {p50 * 1000:.2f} ms ({p50 / vector_p50:.2f}) | "
            f"{recall:.3f} | {filtered['off']:.1f} / {K} | {filtered['relaxed_order']:.1f} / {K} |"
        )


def main(rows: int) -> None:
    call_command("migrate", verbosity=0)
    noisy, queries = _sample_vectors(rows)
    with connection.cursor() as cursor:
        _insert_rows(cursor, noisy)
        qtexts = [str(q.tolist()) for q in queries]
        exact = _exact_neighbours(cursor, qtexts)
        results = {
            name: _measure_index(cursor, name, ddl, qtexts, exact) for name, ddl in INDEXES.items()
        }
    _print_table(rows, results)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000)
