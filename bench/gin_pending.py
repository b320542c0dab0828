"""`python -m bench.gin_pending`: the GIN indexes a search reads, with and without a
pending list (`fastupdate` on / off, migration memory_app.0259), alternating in one run.

With fast update on, a write puts its keys into the index's pending list, which
autovacuum (or the write that fills `gin_pending_list_limit`) merges later, and every
scan of the index reads the whole list, whoever's rows it holds. The bench measures what
that costs where it shows: a user who has just written a conversation's turns (no
ANALYZE since, no merge) and searches them.

A tenant of `--background` generated memories (50 users, each a thread) is loaded and
vacuumed. Then, `--rounds` times for each mode, alternating: the three indexes set to
the mode and their lists merged, `--batch` memories of a new user written as one thread
(`memory_add_many`, embedding included: what a writer waits for), then `--queries`
searches of that user's memories and as many tenant-wide searches by that user (in
process, query vectors given). Reported: the write's time a row, the searches' p50 /
p95, the pending tuples the searches found (pgstattuple), and after/before ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from bench.harness import command_line
from bench.percentiles import nearest_index_percentile

ID = "GINPENDING"
TITLE = "Search GIN indexes with and without a pending list (fastupdate on / off)"
INDEXES = ("memory_lexical_owner", "memory_lexical_public", "memory_shared_grants")
SEED = 14
BACKGROUND_USERS = 50
Series = dict[str, list[float]]  # a mode's write times, search times, pending tuples


def _set_fastupdate(on: bool) -> None:
    """Both modes start from an empty list: the mode's cost is what its own writes add."""
    from django.db import connection

    with connection.cursor() as cursor:
        for name in INDEXES:
            cursor.execute(f"ALTER INDEX {name} SET (fastupdate = {'on' if on else 'off'})")
            cursor.execute("SELECT gin_clean_pending_list(%s::regclass)", [name])


def _pending() -> int | None:
    """Pending tuples of the owner index, or None without the pgstattuple extension."""
    from django.db import connection
    from django.db.utils import DatabaseError

    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pending_tuples FROM pgstatginindex('memory_lexical_owner')")
            return int(cursor.fetchone()[0])
    except DatabaseError:
        return None


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(statistics.median(values), 2),
        "p95": round(nearest_index_percentile(values, 95), 2),
    }


@dataclass
class _Workload:
    """What every round of both modes uses: the tenant, the texts no round has written
    yet, how many memories a new user writes, the questions and their query vectors."""

    tenant: Any
    fresh: Iterator[str]
    batch: int
    questions: list[str]
    vectors: list[list[float]]


def _load_background(
    tenant: Any, texts: list[str], background: int, log: Callable[[str], None]
) -> None:
    """`background` memories of BACKGROUND_USERS users, each a thread, then vacuumed."""
    from django.db import connection

    from memory_app.services.memories import MemoryDraft, memory_add_many

    chunk = 1000
    for start in range(0, background, chunk):
        memory_add_many(
            tenant=tenant,
            drafts=[
                MemoryDraft(
                    user_id=f"bg-{index % BACKGROUND_USERS}",
                    type="fact",
                    content=texts[index],
                    scope="public" if index % 10 == 0 else "private",
                    thread_key=f"bg-{index % BACKGROUND_USERS}",
                    thread_order=index // BACKGROUND_USERS,
                )
                for index in range(start, min(start + chunk, background))
            ],
        )
        log(f"[gin-pending] background {min(start + chunk, background)}/{background}")
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE) memory")


def _prepare(
    rounds: int, background: int, batch: int, queries: int, log: Callable[[str], None]
) -> _Workload:
    """A new tenant with its background memories, and what the rounds write and ask."""
    from django.db import connection

    from bench.memory_data import distinct_texts, query_texts
    from memory_app.embedding import embed_texts
    from sessions_app.models import Tenant

    with connection.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
    tenant = Tenant.objects.create(name=f"gin-pending-{time.strftime('%H%M%S')}")
    texts = [text for _, text in distinct_texts(SEED, background + 2 * rounds * batch)]
    _load_background(tenant, texts, background, log)
    questions = query_texts(SEED, queries)
    vectors = embed_texts(questions)
    return _Workload(tenant, iter(texts[background:]), batch, questions, vectors)


def _write_thread(work: _Workload, user: str) -> float:
    """`work.batch` new memories of `user` as one thread; ms a row, embedding included."""
    from memory_app.services.memories import MemoryDraft, memory_add_many

    drafts = [
        MemoryDraft(
            user_id=user,
            type="fact",
            content=next(work.fresh),
            thread_key=user,
            thread_order=turn,
        )
        for turn in range(work.batch)
    ]
    began = time.perf_counter()
    memory_add_many(tenant=work.tenant, drafts=drafts)
    return (time.perf_counter() - began) * 1000 / work.batch


def _search_ms(work: _Workload, user: str, user_id: str | None) -> list[float]:
    """Each question searched by `user`, within `user_id`'s memories (None: tenant-wide)."""
    from memory_app.selectors.memories import Actor
    from memory_app.selectors.search import memory_search

    times = []
    for question, vector in zip(work.questions, work.vectors, strict=True):
        began = time.perf_counter()
        memory_search(
            tenant=work.tenant,
            actor=Actor(user_id=user),
            query=question,
            user_id=user_id,
            limit=10,
            query_embedding=vector,
        )
        times.append((time.perf_counter() - began) * 1000)
    return times


def _run_mode(work: _Workload, fastupdate: bool, user: str, series: Series) -> int | None:
    """One round of one mode, added to `series`; returns the pending tuples it found."""
    _set_fastupdate(fastupdate)
    series["write_ms_per_row"].append(_write_thread(work, user))
    pending = _pending()
    if pending is not None:
        series["pending"].append(pending)
    for shape, user_id in (("user", user), ("tenant", None)):
        series[shape].extend(_search_ms(work, user, user_id))
    return pending


def _figures(out: dict[str, Series], rounds: int, background: int, batch: int) -> dict[str, Any]:
    figures: dict[str, Any] = {"rounds": rounds, "background": background, "batch": batch}
    for mode, series in out.items():
        figures[mode] = {
            "write_ms_per_row": round(statistics.median(series["write_ms_per_row"]), 3),
            "user": _summary(series["user"]),
            "tenant": _summary(series["tenant"]),
            "pending": max(series["pending"]) if series["pending"] else None,
        }
    return figures


def measure(
    rounds: int, background: int, batch: int, queries: int, log: Callable[[str], None]
) -> dict[str, Any]:
    work = _prepare(rounds, background, batch, queries, log)
    modes = {"on": True, "off": False}
    out: dict[str, Series] = {
        mode: {"write_ms_per_row": [], "user": [], "tenant": [], "pending": []} for mode in modes
    }
    try:
        for round_ in range(rounds):
            order = list(modes) if round_ % 2 == 0 else list(modes)[::-1]
            for mode in order:
                user = f"fresh-{round_}-{mode}"
                pending = _run_mode(work, modes[mode], user, out[mode])
                log(
                    f"[gin-pending] round {round_ + 1}/{rounds} fastupdate {mode}: "
                    f"write {out[mode]['write_ms_per_row'][-1]:.2f} ms a row, "
                    f"pending {pending}, user p50 "
                    f"{statistics.median(out[mode]['user'][-queries:]):.2f} ms"
                )
    finally:
        _set_fastupdate(False)  # as the migrations leave them
    return _figures(out, rounds, background, batch)


def _table(on: dict[str, Any], off: dict[str, Any]) -> str:
    def row(what: str, before: float, after: float) -> str:
        return f"| {what} | {before:.2f} | {after:.2f} | {before / after:.2f}x |"

    rows = [
        row(
            "write, ms a row (embedding included)",
            on["write_ms_per_row"],
            off["write_ms_per_row"],
        ),
        row("search of the user's memories, p50 ms", on["user"]["p50"], off["user"]["p50"]),
        row("search of the user's memories, p95 ms", on["user"]["p95"], off["user"]["p95"]),
        row("tenant-wide search by the user, p50 ms", on["tenant"]["p50"], off["tenant"]["p50"]),
        row("tenant-wide search by the user, p95 ms", on["tenant"]["p95"], off["tenant"]["p95"]),
    ]
    return "\n".join(rows)


def _markdown(
    args: argparse.Namespace, figures: dict[str, Any], load_before: float, load_after: float
) -> str:
    on, off = figures["on"], figures["off"]
    table = _table(on, off)
    return f"""
In process, production settings, a tenant of {args.background} memories ({BACKGROUND_USERS}
users); {args.rounds} rounds of each mode, alternating, each a new user writing
{args.batch} memories as one thread and then searching them {args.queries} times (and
as many tenant-wide searches). Pending tuples in the owner index when the searches ran:
up to {on["pending"]} with fastupdate on, {off["pending"]} off. 1-minute load average
{load_before:.1f} before, {load_after:.1f} after (2 cores shared with other jobs: read
the ratios).

| (fastupdate on / off) | on | off | on / off |
|---|---:|---:|---:|
{table}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gin_pending", description=__doc__)
    parser.add_argument("--rounds", type=int, default=4, help="rounds of each mode")
    parser.add_argument("--background", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=300, help="memories the new user writes")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    command = command_line("bench.gin_pending", argv)

    from bench.harness import BenchResult, log, record
    from bench.run import django_on_data_services

    with django_on_data_services(log):
        load_before = os.getloadavg()[0]
        figures = measure(args.rounds, args.background, args.batch, args.queries, log)
        load_after = os.getloadavg()[0]
        markdown = _markdown(args, figures, load_before, load_after)
        result = BenchResult(ID, TITLE, markdown, figures)
        path = record(result, command, update=not args.no_record)
        log(f"[gin-pending] {figures}; raw: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
