"""`python -m bench.hnsw_shape [--rows 200000] [--queries 40]`: which data shape breaks
the memory HNSW graph, and which index parameters repair it.

Vectors: the real MiniLM embeddings of B2's generated sentences (bench.memory_data), each
repeated in groups ("copies") with Gaussian noise, renormalised, like B2's larger sizes.
For each shape and each (m, ef_construction): build the index in a table of its own,
then recall@10 of `ORDER BY e <=> q LIMIT 10` against an exact scan (numpy, at halfvec
precision) for `--queries` B2 queries, at ef_search 40 and 200. Build seconds are for
comparing rows of one run only (2 shared cores).

Runs on a throwaway embedded PostgreSQL (bench.servers) unless DATABASE_URL is set.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

TITLE = "HNSW graph vs data shape (groups of near vectors) and index parameters"


@dataclass(frozen=True)
class Shape:
    label: str
    group_size: int  # vectors per base sentence
    noise: float  # expected norm of the perturbation of a unit vector


SHAPES = [
    Shape("groups of 5, cosine 0.94 (B2 at 100k)", 5, 0.35),
    Shape("groups of 10, cosine 0.94", 10, 0.35),
    Shape("groups of 50, cosine 0.94 (B2 at 1M)", 50, 0.35),
    Shape("groups of 50, cosine 0.80 (under the merge threshold)", 50, 0.75),
]
PARAMS = [(16, 64), (16, 200), (32, 128)]
EF_SEARCH = [40, 200]


def _vectors(base: np.ndarray, shape: Shape, rows: int) -> np.ndarray:
    # At most one group per distinct sentence: a small group size gives fewer rows.
    bases = max(1, min(len(base), rows // shape.group_size))
    rng = np.random.default_rng(7)
    source = np.arange(bases * shape.group_size) % bases
    noise = rng.normal(0.0, shape.noise / np.sqrt(base.shape[1]), (len(source), base.shape[1]))
    vectors = base[source] + noise.astype(np.float32)
    vectors[:bases] = base[:bases]  # one exact copy of each sentence, as B2
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _exact(queries: np.ndarray, vectors: np.ndarray) -> list[set[int]]:
    half = vectors.astype(np.float16).astype(np.float32)
    return [set(np.argsort(-(half @ q))[:10].tolist()) for q in queries]


def _measure(
    url: str, vectors: np.ndarray, queries: np.ndarray, exact: list[set[int]]
) -> list[dict]:
    import psycopg
    from pgvector import HalfVector
    from pgvector.psycopg import register_vector

    out = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(conn)
        conn.execute("DROP TABLE IF EXISTS bench_hnsw_shape")
        conn.execute("CREATE TABLE bench_hnsw_shape (id int PRIMARY KEY, e halfvec(384))")
        with conn.cursor().copy("COPY bench_hnsw_shape (id, e) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "halfvec"])
            for index, vector in enumerate(vectors):
                copy.write_row((index, HalfVector(vector)))
        conn.execute("SET maintenance_work_mem = '1GB'")
        for m, ef_construction in PARAMS:
            conn.execute("DROP INDEX IF EXISTS bench_hnsw_shape_e")
            began = time.monotonic()
            conn.execute(
                "CREATE INDEX bench_hnsw_shape_e ON bench_hnsw_shape USING hnsw "
                f"(e halfvec_cosine_ops) WITH (m = {m}, ef_construction = {ef_construction})"
            )
            built = time.monotonic() - began
            row = {"m": m, "ef_construction": ef_construction, "build_s": round(built, 1)}
            for ef in EF_SEARCH:
                hits = 0
                with conn.transaction():
                    conn.execute(f"SET LOCAL hnsw.ef_search = {ef}")
                    for query, truth in zip(queries, exact, strict=True):
                        found = conn.execute(
                            "SELECT id FROM bench_hnsw_shape ORDER BY e <=> %s LIMIT 10",
                            (HalfVector(query),),
                        ).fetchall()
                        hits += len({r[0] for r in found} & truth)
                row[f"recall_ef{ef}"] = hits / (10 * len(queries))
            out.append(row)
        conn.execute("DROP TABLE bench_hnsw_shape")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hnsw_shape", description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=40)
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
    from bench.harness import log
    from bench.servers import data_services

    with data_services(log) as (database_url, redis_url):
        os.environ.update(DATABASE_URL=database_url, REDIS_URL=redis_url)
        import django

        django.setup()
        from bench.memory_data import _embeddings, distinct_texts, query_texts
        from memory_app.embedding import embed_texts

        seed = 2  # B2's sentences and queries
        texts = [text for _, text in distinct_texts(seed, 20_000)]
        base = _embeddings(seed, texts, log).astype(np.float32)
        queries = np.asarray(embed_texts(query_texts(seed, args.queries)), dtype=np.float32)
        print("| shape | rows | m | ef_construction | build s | recall@10 ef 40 | ef 200 |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for shape in SHAPES:
            vectors = _vectors(base, shape, args.rows)
            log(f"[hnsw-shape] {shape.label}: {len(vectors):,} vectors")
            exact = _exact(queries, vectors)
            for row in _measure(database_url, vectors, queries, exact):
                print(
                    f"| {shape.label} | {len(vectors):,} | {row['m']} | {row['ef_construction']} "
                    f"| {row['build_s']} | {row['recall_ef40']:.3f} | {row['recall_ef200']:.3f} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
