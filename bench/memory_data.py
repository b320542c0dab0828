"""The memory stage of the benchmark generator: N long-term memories with real vectors.

Why not `memory_add_many`: it embeds every row and dedupes each against its nearest
neighbours under an advisory lock, which is right for agents and hours too slow for a
million rows. This stage writes the same columns directly, with COPY into a staging table
and one `INSERT … SELECT … ON CONFLICT DO NOTHING` per chunk.

Vectors: the first `memory_texts` rows are distinct generated sentences, each embedded with
the real MiniLM model (a few dozen to a few hundred texts/s on 2 shared cores). Every row
after those reuses the real vector of one of them plus a small deterministic Gaussian
perturbation, renormalised, and its text is that sentence plus a reference ("(ref
M-0123456)"): clusters of near-paraphrases, like real memories, at a cost that makes 1M
rows possible. bench/RESULTS.md says so next to every figure measured on such data.

Deterministic and idempotent: row i's id is `md5('engram-bench-memory/<seed>/<i>')::uuid`,
its text, owner, scope and noise derive from (seed, i); chunks of CHUNK rows commit on
their own and a complete chunk is skipped, so a run resumes where it stopped and a second
run inserts nothing. Growing `memories` adds the new rows only (10k ⊂ 100k ⊂ 1M).

The embeddings of the distinct texts are cached in bench/out/ (git-ignored), keyed by the
model and the texts, so a rerun skips the model; delete the folder to recompute them.
What the load leaves to do (indexes, statistics, vacuum, checkpoint) is bench.memory_upkeep.
"""

from __future__ import annotations

import hashlib
import random
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from django.db import connection, transaction

from bench.memory_upkeep import (
    HNSW_INDEXES,
    build_indexes,
    checkpoint,
    fold_lexicon,
    missing_indexes,
    vacuum_analyze,
)
from memory_app.models import MemoryScope, MemorySource, MemoryType
from memory_app.services.memories import content_hash

if TYPE_CHECKING:
    from bench.generate import GenerateSpec, Progress, StageResult

CHUNK = 5000  # rows per transaction; fixed, so that chunk i's noise never depends on N
NOISE_NORM = 0.35  # expected norm of the perturbation of a unit vector (cosine ≈ 0.94)
# Loading more than this many rows (and more than the table holds) drops the HNSW index
# and builds it again afterwards: faster than maintaining it row by row (bench/RESULTS.md,
# "Memory data").
REBUILD_INDEX_ABOVE = 5_000
CACHE_DIR = Path(__file__).resolve().parent / "out" / "embeddings"

AGENTS = ["shop-assistant", "support-bot", "research-agent"]
_WORDS: dict[str, list[str]] = {
    "color": ["black", "white", "silver", "navy blue", "forest green", "red", "matte grey",
              "rose gold", "orange", "purple"],
    "product": ["laptop", "mechanical keyboard", "4K monitor", "noise-cancelling headphones",
                "running shoes", "espresso machine", "hiking backpack", "office chair",
                "tablet", "smartwatch", "docking station", "wireless mouse", "rain jacket",
                "camping tent", "electric kettle", "standing desk", "phone case",
                "bluetooth speaker", "winter boots", "yoga mat"],
    "brand": ["Dell", "Lenovo", "Apple", "Logitech", "Sony", "Bose", "Asus", "Samsung",
              "Patagonia", "Nike", "Breville", "Herman Miller", "Garmin", "Anker", "HP"],
    "purpose": ["travel", "gaming", "video editing", "long commutes", "trail running",
                "working from home", "a small apartment", "their kids", "photography",
                "late-night coding", "weekend camping", "the gym", "a home studio"],
    "job": ["nurse", "software engineer", "teacher", "architect", "photographer",
            "accountant", "chef", "student", "researcher", "sales manager", "pilot"],
    "city": ["Berlin", "Lisbon", "Toronto", "Austin", "Osaka", "Nairobi", "Melbourne",
             "Lyon", "Denver", "Seoul", "Dublin", "Oslo", "Bogotá", "Pune"],
    "feature": ["battery life", "weight", "warranty length", "screen brightness",
                "noise level", "price", "delivery time", "repairability", "water resistance",
                "return policy", "energy use", "build quality"],
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
    "issue": ["a late delivery", "a damaged box", "a missing cable", "a wrong size",
              "a double charge", "a broken hinge", "a dead pixel", "slow shipping"],
    "budget": ["200", "350", "500", "800", "1,200", "1,500", "2,000"],
}  # fmt: skip
# (type, template). Policies are tenant-wide knowledge, so public.
_TEMPLATES: list[tuple[str, str]] = [
    (MemoryType.PREFERENCE, "Prefers a {color} {product} from {brand} for {purpose}."),
    (MemoryType.PREFERENCE, "Wants a {product} with great {feature}; budget {budget} dollars."),
    (MemoryType.PREFERENCE, "Dislikes {brand} products because of their {feature}."),
    (MemoryType.FACT, "Works as a {job} in {city} and uses a {product} every day."),
    (MemoryType.FACT, "Owns a {color} {brand} {product} bought for {purpose}."),
    (MemoryType.FACT, "Lives in {city}; deliveries there usually take a week."),
    (MemoryType.EPISODIC, "On {day} complained about {issue} with the {brand} {product}."),
    (MemoryType.EPISODIC, "On {day} compared {brand} and another {product} on {feature}."),
    (MemoryType.PROCEDURAL, "Asked for a {product}: show {brand} first, mention {feature}."),
    (MemoryType.POLICY, "A {product} can be returned within 30 days, or later for {issue}."),
]  # fmt: skip
_QUERY_TEMPLATES = [
    "Which {product} would suit {purpose}?",
    "What does the user think about {brand}?",
    "Any problems with {issue} before?",
    "Where does the customer live and what do they do?",
    "Recommend a {color} {product} within {budget} dollars",
    "How important is {feature} to them?",
    "return rules for a {product}",
    "what did they buy for {purpose}",
]

COLUMNS = [
    "id", "tenant_id", "user_id", "agent_id", "type", "scope", "content", "summary",
    "structured", "content_hash", "embedding", "embedding_model", "importance",
    "confidence", "tags", "source", "version", "created_at", "updated_at",
    "last_accessed_at", "access_count", "decay_score", "pinned", "allowed_users",
    "allowed_roles", "thread_key", "thread_context",
]  # fmt: skip
COLUMN_TYPES = [
    "uuid", "int8", "varchar", "varchar", "varchar", "varchar", "text", "text", "jsonb",
    "varchar", "vector", "varchar", "float8", "float8", "varchar[]", "varchar", "int4",
    "timestamptz", "timestamptz", "timestamptz", "int4", "float8", "bool", "varchar[]",
    "varchar[]", "varchar", "text",
]  # fmt: skip


def _fill(template: str, rng: random.Random) -> str:
    return template.format(**{key: rng.choice(words) for key, words in _WORDS.items()})


def distinct_texts(seed: int, count: int) -> list[tuple[str, str]]:
    """`count` distinct (type, text) pairs, the same for the same seed whatever `count`
    (a prefix of a longer list), so that a larger run reuses a smaller run's rows."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    attempt = 0
    limit = count * 50 + 1000  # bounded: the vocabulary has millions of combinations
    while len(out) < count and attempt < limit:
        rng = random.Random(f"engram-bench-memory-text/{seed}/{attempt}")
        attempt += 1
        memory_type, template = _TEMPLATES[rng.randrange(len(_TEMPLATES))]
        text = _fill(template, rng)
        if text not in seen:
            seen.add(text)
            out.append((str(memory_type), text))
    if len(out) < count:
        raise RuntimeError(f"only {len(out)} distinct texts for seed {seed}")
    return out


def query_texts(seed: int, count: int) -> list[str]:
    """Search queries phrased unlike the memories (questions, fragments), deterministic."""
    out = []
    for index in range(count):
        rng = random.Random(f"engram-bench-memory-query/{seed}/{index}")
        out.append(_fill(_QUERY_TEMPLATES[index % len(_QUERY_TEMPLATES)], rng))
    return out


def memory_id(seed: int, index: int) -> uuid.UUID:
    return uuid.UUID(hashlib.md5(f"engram-bench-memory/{seed}/{index}".encode()).hexdigest())  # noqa: S324 - an id, not a secret


def user_of(index: int, tenants: int, users: int) -> tuple[int, str]:
    """(tenant index, user id) of row `index`: round-robin over tenants, then users."""
    return index % tenants, f"user-{(index // tenants) % users}"


def _embeddings(seed: int, texts: list[str], progress: Progress) -> np.ndarray:
    """Real MiniLM vectors of `texts`, from the cache when the same model embedded the
    same texts before."""
    from memory_app.embedding import embed_texts, embedder

    model = embedder().model_name
    path = _cache_path(model, seed, texts)
    if path.exists():
        progress(f"[generate] memories: {len(texts):,} embeddings from the cache ({path.name})")
        return np.load(path)
    # A larger size's text list starts with a smaller size's (distinct_texts is a prefix
    # for the same seed): embed only what the longest cached prefix lacks.
    cached = _cached_prefix(model, seed, texts)
    if len(cached):
        progress(f"[generate] memories: {len(cached):,} of {len(texts):,} embeddings cached")
    started = time.monotonic()
    vectors: list[list[float]] = []
    batch = 256
    for start in range(len(cached), len(texts), batch):
        vectors.extend(embed_texts(texts[start : start + batch]))
        done = len(cached) + len(vectors)
        if len(vectors) % (batch * 8) == 0 or done == len(texts):
            rate = len(vectors) / (time.monotonic() - started)
            progress(f"[generate] memories: embedded {done:,}/{len(texts):,} ({rate:,.0f}/s)")
    fresh = np.asarray(vectors, dtype=np.float32)  # never empty: the cache was shorter
    array = np.concatenate([cached, fresh]) if len(cached) else fresh
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    np.save(path, array)
    return array


def _cache_path(model: str, seed: int, texts: list[str]) -> Path:
    key = hashlib.sha256("\n".join([model, *texts]).encode()).hexdigest()[:16]
    return CACHE_DIR / f"{model}-{seed}-{len(texts)}-{key}.npy"


def _cached_prefix(model: str, seed: int, texts: list[str]) -> np.ndarray:
    """The vectors of the longest cached list that `texts` starts with (empty if none)."""
    best = np.empty((0, 0), dtype=np.float32)
    for candidate in CACHE_DIR.glob(f"{model}-{seed}-*.npy"):
        try:
            length = int(candidate.stem.rsplit("-", 2)[-2])
        except (IndexError, ValueError):
            continue
        shorter = best.shape[0] < length < len(texts)
        if shorter and candidate == _cache_path(model, seed, texts[:length]):
            best = np.load(candidate)
    return best


def chunk_vectors(base: np.ndarray, seed: int, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """(vectors, base index) of rows [lo, hi): real vectors for the first len(base) rows,
    then a base vector plus noise seeded by (seed, chunk), renormalised."""
    distinct = len(base)
    indices = np.arange(lo, hi)
    rng = np.random.default_rng([seed, lo // CHUNK])
    picks = rng.integers(0, distinct, hi - lo)
    source = np.where(indices < distinct, indices % distinct, picks)
    noise = rng.normal(0.0, NOISE_NORM / np.sqrt(base.shape[1]), (hi - lo, base.shape[1]))
    real = indices < distinct
    vectors = base[source].copy()
    perturbed = vectors[~real] + noise[~real].astype(np.float32)
    vectors[~real] = perturbed / np.linalg.norm(perturbed, axis=1, keepdims=True)
    return vectors, source


def _rows(
    spec: GenerateSpec,
    tenant_ids: list[int],
    texts: list[tuple[str, str]],
    base: np.ndarray,
    model: str,
    lo: int,
    hi: int,
    anchor: datetime,
) -> list[tuple[Any, ...]]:
    from pgvector import Vector

    vectors, sources = chunk_vectors(base, spec.seed, lo, hi)
    rows: list[tuple[Any, ...]] = []
    for offset, index in enumerate(range(lo, hi)):
        memory_type, text = texts[int(sources[offset])]
        if index >= len(texts):
            text = f"{text} (ref M-{index:07d})"
        tenant_index, user_id = user_of(index, spec.tenants, spec.memory_users)
        roll = (index * 7919 + spec.seed) % 100
        if memory_type == MemoryType.POLICY or roll < 10:
            scope, allowed_users, allowed_roles = MemoryScope.PUBLIC, [], []
        elif roll < 15:
            other = user_of(index + spec.tenants, spec.tenants, spec.memory_users)[1]
            scope, allowed_users, allowed_roles = MemoryScope.SHARED, [other], ["support"]
        else:
            scope, allowed_users, allowed_roles = MemoryScope.PRIVATE, [], []
        at = anchor - timedelta(days=(index * 31) % 365, seconds=(index * 997) % 86400)
        rows.append(
            (
                memory_id(spec.seed, index), tenant_ids[tenant_index], user_id,
                AGENTS[index % len(AGENTS)], memory_type, str(scope), text, "", "{}",
                content_hash(text), Vector(vectors[offset]), model,
                round(0.2 + 0.6 * ((index * 37) % 100) / 100, 2), 1.0, [],
                str(MemorySource.SYSTEM_GENERATED), 1, at, at, at, 0, 1.0, False,
                allowed_users, allowed_roles, "", "",
            )
        )  # fmt: skip
    return rows


def _copy_chunk(rows: list[tuple[Any, ...]]) -> int:
    """COPY (binary) into a staging table, then one INSERT … ON CONFLICT DO NOTHING."""
    from pgvector.psycopg.vector import register_vector_info
    from psycopg.types import TypeInfo

    with connection.cursor() as cursor:
        raw = cursor.cursor  # the psycopg cursor under Django's wrapper
        info = TypeInfo.fetch(raw.connection, "vector")
        register_vector_info(raw, info)  # this cursor only: nothing else sees numpy dumpers
        cursor.execute(
            "CREATE TEMP TABLE IF NOT EXISTS bench_memory_stage "
            "(LIKE memory INCLUDING DEFAULTS EXCLUDING GENERATED) ON COMMIT DELETE ROWS"
        )
        cursor.execute("ALTER TABLE bench_memory_stage DROP COLUMN IF EXISTS search_vector")
        columns = ", ".join(COLUMNS)
        with raw.copy(
            f"COPY bench_memory_stage ({columns}) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(COLUMN_TYPES)
            for row in rows:
                copy.write_row(row)
        cursor.execute(
            f"INSERT INTO memory ({columns}) SELECT {columns} FROM bench_memory_stage "
            "ON CONFLICT DO NOTHING"
        )
        return cursor.rowcount


def _existing(ids: list[uuid.UUID]) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memory WHERE id = ANY(%s::uuid[])", [ids])
        return int(cursor.fetchone()[0])


def _missing_chunks(spec: GenerateSpec) -> list[tuple[int, int]]:
    """The [lo, hi) row ranges of chunks that lack at least one of their rows."""
    chunks = [(lo, min(lo + CHUNK, spec.memories)) for lo in range(0, spec.memories, CHUNK)]
    missing = []
    for lo, hi in chunks:
        if _existing([memory_id(spec.seed, i) for i in range(lo, hi)]) < hi - lo:
            missing.append((lo, hi))
    return missing


def _drop_hnsw_for_bulk_load(to_load: int, progress: Progress) -> None:
    """Drop the HNSW indexes when the load is large and outgrows the table, so they are
    built once afterwards instead of maintained row by row."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memory")
        existing_rows = int(cursor.fetchone()[0])
    if to_load > REBUILD_INDEX_ABOVE and to_load > existing_rows:
        with connection.cursor() as cursor:
            for name in HNSW_INDEXES:
                cursor.execute(f"DROP INDEX IF EXISTS {name}")
        progress(f"[generate] memories: {to_load:,} rows to load: HNSW indexes dropped")


def _load_chunks(
    spec: GenerateSpec,
    tenant_ids: list[int],
    missing: list[tuple[int, int]],
    result: StageResult,
    progress: Progress,
    started: float,
) -> None:
    """Embed the distinct texts and load the `missing` chunks, one transaction each,
    counting the rows inserted in `result`."""
    from bench.generate import _anchor, _Throttle
    from memory_app.embedding import embedder

    throttle = _Throttle(progress)
    texts = distinct_texts(spec.seed, min(spec.memory_texts, spec.memories))
    base = _embeddings(spec.seed, [text for _, text in texts], progress)
    model = embedder().model_name
    anchor = _anchor()
    _drop_hnsw_for_bulk_load(sum(hi - lo for lo, hi in missing), progress)
    for number, (lo, hi) in enumerate(missing, 1):
        rows = _rows(spec, tenant_ids, texts, base, model, lo, hi, anchor)
        with transaction.atomic():
            result.inserted["memory"] += _copy_chunk(rows)
        elapsed = time.monotonic() - started
        throttle(
            f"[generate] memories: chunk {number}/{len(missing)}, "
            f"{result.inserted['memory']:,} new rows, "
            f"{result.inserted['memory'] / elapsed:,.0f} rows/s",
            force=number == len(missing),
        )


def _finish_load(result: StageResult, progress: Progress) -> None:
    """What the load leaves to do: the indexes it dropped (also after a run killed
    between drop and build), the BM25 sums, statistics, and a checkpoint."""
    missing = missing_indexes()
    if missing:
        result.timings["index_build"] = build_indexes(progress, missing)
    result.timings["lexicon_fold"] = fold_lexicon(progress)
    vacuum_analyze()
    if not connection.in_atomic_block:
        checkpoint(progress)


def stage_memories(spec: GenerateSpec, progress: Progress) -> StageResult:
    from bench.generate import StageResult, _tenants

    result = StageResult("memories", {"memory": 0})
    if spec.memories <= 0:
        return result
    started = time.monotonic()
    tenant_ids = [tenant.pk for tenant in _tenants(spec)]
    missing = _missing_chunks(spec)
    if missing:
        _load_chunks(spec, tenant_ids, missing, result, progress, started)
    _finish_load(result, progress)
    result.seconds = time.monotonic() - started
    progress(
        f"[generate] memories: {spec.memories:,} rows ({result.inserted['memory']:,} new) "
        f"in {result.seconds:.1f}s"
    )
    return result
