"""The memory stage of the benchmark generator: exact counts, idempotent, resumable."""

from __future__ import annotations

from io import StringIO

import numpy as np
import pytest
from django.db import connection

from bench.generate_cli import main as generate_main
from bench.memory_data import CHUNK, chunk_vectors, distinct_texts
from bench.memory_upkeep import prewarm_memory
from memory_app.models import Memory

pytestmark = pytest.mark.django_db

ARGS = ["--tenants=2", "--sessions=0", "--turns-per-session=0", "--seed=5", "--memory-users=4"]


def generate(memories: int, texts: int) -> str:
    out = StringIO()
    generate_main(
        [*ARGS, f"--memories={memories}", f"--memory-texts={texts}"],
        stdout=out,
        stderr=StringIO(),
    )
    return out.getvalue()


def test_memories_twice_gives_exact_counts_then_grows() -> None:
    assert "memory +12" in generate(12, 8)
    assert Memory.objects.count() == 12
    first = sorted(Memory.objects.values_list("id", "content", "user_id", "tenant_id"))

    assert "memory +0" in generate(12, 8)  # a second run changes nothing
    assert sorted(Memory.objects.values_list("id", "content", "user_id", "tenant_id")) == first

    generate(20, 8)  # growing adds the new rows only
    assert Memory.objects.count() == 20
    assert set(first) <= set(Memory.objects.values_list("id", "content", "user_id", "tenant_id"))
    assert Memory.objects.values("tenant_id").distinct().count() == 2
    assert Memory.objects.filter(content__contains="(ref M-").count() == 12  # reused vectors
    with connection.cursor() as cursor:  # the search's index is there after the load
        cursor.execute("SELECT to_regclass('memory_embedding_hnsw') IS NOT NULL")
        assert cursor.fetchone()[0]


def test_texts_and_vectors_are_deterministic_prefixes() -> None:
    assert distinct_texts(5, 10) == distinct_texts(5, 30)[:10]
    rng = np.random.default_rng(0)
    base = rng.normal(size=(8, 384)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    vectors, sources = chunk_vectors(base, 5, 0, 20)
    again, _ = chunk_vectors(base, 5, 0, 20)
    assert np.array_equal(vectors, again)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(vectors[:8], base) and list(sources[:8]) == list(range(8))
    similarity = (vectors[8:] * base[sources[8:]]).sum(axis=1)
    assert similarity.min() > 0.85  # near its real vector, not random
    assert CHUNK >= 1000


def test_prewarm_reads_the_table_its_toast_and_every_index() -> None:
    # B2 reads these before measuring, so that every size is measured in memory: a relation
    # left out (an index added later, the TOAST of the embeddings) would be read from disk
    # by the first searches again.
    generate(12, 8)
    lines: list[str] = []
    prewarm_memory(lines.append)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_index WHERE indrelid IN ('memory'::regclass, "
            "(SELECT reltoastrelid FROM pg_class WHERE oid = 'memory'::regclass))"
        )
        indexes = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM pg_extension WHERE extname = 'pg_prewarm'")
        assert cursor.fetchone()[0] == 1
    assert indexes > 10  # the memory table's own indexes and its TOAST's
    assert lines[-1].startswith(f"[generate] prewarm: {indexes + 2} relations, ")
