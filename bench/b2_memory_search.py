"""B2 memory search: latency of `POST /api/v1/memories/search` as the store grows, and
recall@10 of its vector step against an exact scan.

- Latency: the endpoint over HTTP to gunicorn (`config.settings.production`, workers =
  nproc, gthread), query embedding included (the worker embeds the query with MiniLM),
  from `threads` client threads, at each size; p50/p95 per size and the ratio of the
  largest size's p95 to the 10k one's.
- Two request shapes, both in the largest tenant: "user" (`user_id` = one user: an
  exact order of the user's rows, read from the covering (tenant, user) index; HNSW is
  not involved) and "tenant" (`acting_user_id` only: the tenant's public memories plus
  the user's own and those shared with them, ~10% of the tenant; the search looks in
  each of those branches on its own, the public one in its partial HNSW graph).
- Cold and repeated queries: the "user" and "tenant" shapes send queries no earlier
  request of the run sent (their own generated set per size and shape), so the query
  embedding is computed in every request, caches notwithstanding; "user, repeated"
  replays the "user" shape's bodies, whose vectors the embedding cache now holds.
- Recall@10: the first ten of `memory_search(mode="vector")`'s vector ranking (the real
  selector, so the same ef_search, iterative scan and filters as in production) against
  an exact top ten under the same filters, ordered by the full-precision
  `embedding <=> q` (an expression no index covers: a sequential scan).

The data grows in place (10k ⊂ 100k ⊂ 1M, bench.memory_data), so sizes run in order and
cannot alternate; each size's figures are taken right after its load, VACUUM ANALYZE and
a read of its relations into the page cache (`prewarm_memory`: at 1M, whether a user's
pages were still in the VM's page cache after the load decided the "user" p95) and one
search of every user in both shapes (`bench.b2_warmup`).
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass
from typing import Any

from bench.b2_context import context_session, measure_context
from bench.b2_vector_checks import K, explain_vector_step, vector_recall
from bench.b2_warmup import search_every_user_once, warm_every_worker
from bench.generate import GenerateSpec
from bench.harness import BenchContext, BenchResult
from bench.loadgen import HttpPoster, LoadResult, run_load
from bench.memory_data import query_texts
from bench.memory_upkeep import prewarm_memory
from bench.servers import Gunicorn

ID = "B2"
TITLE = "Memory search: POST /api/v1/memories/search p50/p95 as memories grow; recall@10"
TARGET_P95_RATIO = 1.5
TARGET_RECALL = 0.95
SHAPES = ["user", "tenant"]
REPEAT = "user, repeated"  # the "user" bodies again: the query vectors are cached
TARGET_P95_AT_100K_MS = 40.0


@dataclass(frozen=True)
class B2Size:
    sizes: list[int]
    memory_texts: int
    queries: int
    requests_per_shape: int
    seconds_per_shape: float
    threads: int = 2
    # Each shape is measured this many times at each size, the shapes in turn, and its
    # figures are the median round's: on a shared 2-core machine one round's p95 of the
    # same code moved by a third between runs (10k "user": 18.9-27.6 ms).
    rounds: int = 3


SIZES = {
    "short": B2Size(sizes=[10_000, 100_000], memory_texts=5_000, queries=100,
                    requests_per_shape=200, seconds_per_shape=25),
    "full": B2Size(sizes=[10_000, 100_000, 1_000_000], memory_texts=20_000, queries=100,
                   requests_per_shape=600, seconds_per_shape=60),
}  # fmt: skip
TABLE_HEAD = (
    "| memories | shape | requests | errors | p50 ms | p95 ms | p95 of each round "
    "| p95 vs 10k | load (1 min) | recall@10 | vector ms | exact ms | plan of the vector step |\n"
    "|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|"
)
SEED = 2  # its own tenants (bench-2-t0000, …), apart from B1/B3's sessions


def dataset(size: B2Size, memories: int) -> GenerateSpec:
    return GenerateSpec(
        tenants=2,
        sessions=0,
        turns_per_session=0,
        steps_per_turn=0,
        seed=SEED,
        memories=memories,
        memory_texts=size.memory_texts,
        memory_users=1000,
    )


def _query_users(count: int) -> list[str]:
    # Users of tenant 0 with memories at every size (row i belongs to user (i // 2) % 1000).
    return [f"user-{(index * 37) % 1000}" for index in range(count)]


def _load_average() -> float:
    import os

    return os.getloadavg()[0]


def _bodies(queries: list[str], users: list[str], shape: str) -> list[bytes]:
    key = "user_id" if shape == "user" else "acting_user_id"
    return [
        json.dumps({"query": q, key: u, "limit": K}).encode()
        for q, u in zip(queries, users, strict=True)
    ]


def _cold_bodies(size: B2Size, memories: int, shape: str, round_: int) -> list[bytes]:
    """Bodies whose queries no other request of the run sends (a query seed of their own
    per size, shape and round), so every request embeds its query: the caches do not
    help."""
    count = size.requests_per_shape + 5 * size.threads  # the measured ones + warm-up
    offset = round_ * len(SHAPES) + SHAPES.index(shape) + 1  # below 10 for 4 rounds
    seed = SEED * 1_000_000 + memories // 1000 * 10 + offset
    return _bodies(query_texts(seed, count), _query_users(count), shape)


def _median_round(rounds: list[LoadResult]) -> dict[str, Any]:
    """A shape's figures from its rounds: the median of their p50s and of their p95s (each
    round's own percentile), the requests and errors of all, and every round's summary."""
    summaries = [result.summary() for result in rounds]
    return {
        "requests": sum(r["requests"] for r in summaries),
        "errors": sum(r["errors"] for r in summaries),
        "p50_ms": round(statistics.median(r["p50_ms"] for r in summaries), 2),
        "p95_ms": round(statistics.median(r["p95_ms"] for r in summaries), 2),
        "rounds": summaries,
    }


# --- The run -------------------------------------------------------------------------


def _measure_shapes(
    ctx: BenchContext, server: Gunicorn, secret: str, size: B2Size, memories: int
) -> tuple[dict[str, list[LoadResult]], dict[str, list[float]]]:
    """Every shape's rounds at one size, the shapes in turn within a round: each round's
    load result and the load average before it, by shape."""
    loads: dict[str, list[LoadResult]] = {shape: [] for shape in [*SHAPES, REPEAT]}
    load: dict[str, list[float]] = {shape: [] for shape in [*SHAPES, REPEAT]}
    for round_ in range(size.rounds):
        bodies = {s: _cold_bodies(size, memories, s, round_) for s in SHAPES}
        bodies[REPEAT] = bodies["user"]  # sent by this round's "user" just before
        for shape in [*SHAPES, REPEAT]:
            posters = [
                HttpPoster(
                    port=server.port,
                    paths=["/api/v1/memories/search"],
                    bodies=bodies[shape][t :: size.threads],
                    headers={"Authorization": f"Bearer {secret}"},
                    expect=200,
                )
                for t in range(size.threads)
            ]
            load[shape].append(_load_average())
            r = run_load(
                name=f"{shape}@{memories}#{round_ + 1}",
                operations=posters,
                max_requests=size.requests_per_shape,
                max_seconds=size.seconds_per_shape,
                warmup_per_thread=5,
            )
            loads[shape].append(r)
            ctx.log(
                f"[B2] {memories:>9,} memories, {shape:>6}, round {round_ + 1}/"
                f"{size.rounds}: {r.requests} requests, p50 {r.percentile(50):.1f} ms, "
                f"p95 {r.percentile(95):.1f} ms, errors {r.errors}, "
                f"load {load[shape][-1]:.1f}"
            )
    return loads, load


def run(ctx: BenchContext) -> BenchResult:
    from django.db import connection

    from memory_app.embedding import embed_texts
    from sessions_app.models import Tenant
    from sessions_app.services.api_keys import api_key_create

    size = SIZES[ctx.size]
    queries = query_texts(SEED, size.queries)
    users = _query_users(size.queries)
    vectors = embed_texts(queries)
    per_size: dict[int, dict[str, Any]] = {}
    context: dict[int, dict[str, Any]] = {}
    session = None
    server = Gunicorn(env=ctx.server_env, workers=ctx.nproc, threads=2)
    for memories in size.sizes:
        spec = dataset(size, memories)
        began = time.monotonic()
        ctx.ensure_dataset(spec)
        generate_seconds = time.monotonic() - began
        tenant = Tenant.objects.get(name=spec.tenant_name(0))
        prewarm_memory(ctx.log)  # every size measured with its data in memory
        search_every_user_once(tenant=tenant, users=spec.memory_users, log=ctx.log, seed=SEED)
        recall = vector_recall(tenant, queries, users, vectors, SHAPES)
        plans = {s: explain_vector_step(tenant, users[0], s, vectors[0]) for s in SHAPES}
        secret = api_key_create(tenant=tenant, name=f"b2-{memories}").secret
        connection.close()
        with server:  # a fresh server per size: no cache carries over from the smaller one
            warm_every_worker(server, secret, _bodies(queries, users, "user")[0])
            loads, load = _measure_shapes(ctx, server, secret, size, memories)
            if session is None:
                session = context_session(tenant)
            context[memories] = measure_context(server, secret, session, size)
            ctx.log(
                f"[B2] {memories:>9,} memories, context: p50 {context[memories]['p50_ms']} ms, "
                f"p95 {context[memories]['p95_ms']} ms"
            )
        per_size[memories] = {
            "generate_seconds": round(generate_seconds, 1),
            "http": {shape: _median_round(loads[shape]) for shape in [*SHAPES, REPEAT]},
            "load_average_1min": {shape: max(values) for shape, values in load.items()},
            "recall": recall,
            "plans": plans,
        }
        if len(per_size) < len(size.sizes):  # the 1M size takes long: keep what is measured
            _record_partial(ctx, size, server, per_size, context)
    return _report(ctx, size, server, per_size, context)


def _record_partial(
    ctx: BenchContext,
    size: B2Size,
    server: Gunicorn,
    per_size: dict[int, dict[str, Any]],
    context: dict[int, dict[str, Any]],
) -> None:
    """RESULTS.md and the raw JSON with the sizes measured so far, marked partial, so a run
    stopped during the next (larger) size still leaves its figures."""
    import dataclasses

    from bench.harness import environment, update_results, write_json

    done = dataclasses.replace(size, sizes=list(per_size))
    result = _report(ctx, done, server, per_size, context)
    pending = ", ".join(f"{m:,}" for m in size.sizes if m not in per_size)
    result.markdown = (
        f"**Partial: written after {max(per_size):,} memories; {pending} still running "
        "(this section is replaced when the run ends).**\n" + result.markdown
    )
    info = environment(f"python -m bench.run --size {ctx.size} --only {ID}")
    write_json(result, info)
    update_results(result, info)


def _fmt(value: float) -> str:
    return f"{value:.1f}"


def _rounds(http: dict[str, Any]) -> str:
    return " / ".join(_fmt(r["p95_ms"]) for r in http["rounds"])


def _table_rows(per_size: dict[int, dict[str, Any]], smallest: int) -> list[str]:
    """The table's rows: a size's shapes, each with its p95 against the smallest size's."""
    rows = []
    for memories, figures in per_size.items():
        for shape in [*SHAPES, REPEAT]:
            http = figures["http"][shape]
            base = per_size[smallest]["http"][shape]["p95_ms"]
            load = figures["load_average_1min"][shape]
            row = (
                f"| {memories:,} | {shape} | {http['requests']} | {http['errors']} | "
                f"{_fmt(http['p50_ms'])} | {_fmt(http['p95_ms'])} | {_rounds(http)} | "
                f"{http['p95_ms'] / base:.2f}x | {load:.1f} |"
            )
            if shape == REPEAT:  # same queries as "user": the recall columns are its
                rows.append(row + " | | | |")
                continue
            recall = figures["recall"][shape]
            plan = " → ".join(figures["plans"][shape]["nodes"])
            rows.append(
                f"{row} {recall['recall_at_10']:.3f} | {recall['vector_search_ms_p50']:.1f} | "
                f"{recall['exact_scan_ms_p50']:.1f} | {plan} |"
            )
    return rows


def _verdict_100k(per_size: dict[int, dict[str, Any]]) -> str:
    """Each shape's p95 at 100,000 memories against the target; "" without that size."""
    at_100k = per_size.get(100_000)
    if at_100k is None:
        return ""
    p95s = {shape: at_100k["http"][shape]["p95_ms"] for shape in [*SHAPES, REPEAT]}
    worst_100k = max(p95s[shape] for shape in SHAPES)
    return (
        "p95 at 100,000 memories: "
        + ", ".join(f"{shape} {p95:.1f} ms" for shape, p95 in p95s.items())
        + f" — cold queries {'meet' if worst_100k <= TARGET_P95_AT_100K_MS else 'miss'}"
        f" the ≤ {TARGET_P95_AT_100K_MS:g} ms target."
    )


def _context_line(context: dict[int, dict[str, Any]], smallest: int, largest: int) -> str:
    ratio = context[largest]["p95_ms"] / context[smallest]["p95_ms"]
    sizes = "; ".join(
        f"{m:,} memories: p50 {c['p50_ms']} ms, p95 {c['p95_ms']} ms" for m, c in context.items()
    )
    return f"{sizes} (p95 ratio {ratio:.2f}x)"


def _setup_text(size: B2Size, server: Gunicorn, per_size: dict[int, dict[str, Any]]) -> str:
    """The section's first paragraph: the data, the requests, the shapes and the checks."""
    largest = size.sizes[-1]
    generated = ", ".join(f"{m:,}: {per_size[m]['generate_seconds']:.0f} s" for m in per_size)
    return f"""\
Data: {largest:,} memories at most, over 2 tenants x 1,000 users (10% public, 5% shared,
the rest private). The first {size.memory_texts:,} are distinct sentences embedded with
MiniLM; each further memory is one of those vectors plus deterministic Gaussian noise
(cosine ≈ 0.94 to its source), its text the sentence plus "(ref M-…)"
(bench/memory_data.py). Generation (cumulative, embeddings cached): {generated}.
Requests: {size.queries} questions phrased unlike the memories, {size.threads} client
threads, up to {size.requests_per_shape} requests or {size.seconds_per_shape:g} s per
shape, size and round, {size.rounds} rounds; p50 / p95 are the rounds' medians; server
`gunicorn {" ".join(server.argv[3:])}` with production settings. Each request embeds a
query never sent before, runs the hybrid search and counts its hits' access. Before each
size the table and its indexes are prewarmed and every user is searched once with other
queries: a server that has answered its users before.
Shapes: "user" = `user_id` set; "tenant" = `acting_user_id` only (public + own +
shared-with-me); "user, repeated" = the "user" requests again (vectors cached). Load =
1-minute load average (2 cores). Recall@10: `memory_search(mode="vector")` against an
exact full-precision scan, same filters and queries; "vector ms" / "exact ms" their
in-process medians. Plan: EXPLAIN ANALYZE of the vector step for the first query."""


def _markdown(
    size: B2Size,
    server: Gunicorn,
    per_size: dict[int, dict[str, Any]],
    context: dict[int, dict[str, Any]],
    ratios: dict[str, float],
    worst_recall: float,
) -> str:
    """RESULTS.md's section: the setup, the table, the verdicts against the targets and
    the context assembly's latency."""
    smallest, largest = size.sizes[0], size.sizes[-1]
    rows = _table_rows(per_size, smallest)
    verdict_latency = "meets" if max(ratios.values()) <= TARGET_P95_RATIO else "misses"
    verdict_recall = "meets" if worst_recall >= TARGET_RECALL else "misses"
    verdict_100k = _verdict_100k(per_size)
    context_line = _context_line(context, smallest, largest)
    return f"""
{_setup_text(size, server, per_size)}

{TABLE_HEAD}
{chr(10).join(rows)}

**p95 at {largest:,} / p95 at {smallest:,}: {", ".join(f"{s} {r:.2f}x" for s, r in ratios.items())}
— {verdict_latency} the ≤ {TARGET_P95_RATIO}x target. Worst recall@10 {worst_recall:.3f} —
{verdict_recall} the ≥ {TARGET_RECALL} target. {verdict_100k}**

Context assembly (`GET /api/v1/sessions/{{id}}/context?query=…&budget=2000`, a session of
12 turns, the query embedded and memories searched in the request): {context_line}.

Sizes run one after the other on a shared 2-core machine (the data grows in place), so
unlike the other benchmarks the latency ratio compares runs minutes apart, not
interleaved phases.
"""


def _report(
    ctx: BenchContext,
    size: B2Size,
    server: Gunicorn,
    per_size: dict[int, dict[str, Any]],
    context: dict[int, dict[str, Any]],
) -> BenchResult:
    smallest, largest = size.sizes[0], size.sizes[-1]
    ratios = {
        shape: per_size[largest]["http"][shape]["p95_ms"]
        / per_size[smallest]["http"][shape]["p95_ms"]
        for shape in SHAPES
    }
    worst_recall = min(per_size[m]["recall"][s]["recall_at_10"] for m in per_size for s in SHAPES)
    markdown = _markdown(size, server, per_size, context, ratios, worst_recall)
    data = {
        "size": ctx.size,
        "sizes": size.sizes,
        "memory_texts": size.memory_texts,
        "queries": size.queries,
        "threads": size.threads,
        "gunicorn": server.argv[3:],
        "per_size": {str(m): v for m, v in per_size.items()},
        "p95_ratio_largest_to_smallest": {s: round(r, 3) for s, r in ratios.items()},
        "worst_recall_at_10": round(worst_recall, 4),
        "context": context,
        "targets": {"p95_ratio": TARGET_P95_RATIO, "recall_at_10": TARGET_RECALL},
    }
    return BenchResult(id=ID, title=TITLE, markdown=markdown, data=data)
