"""`python -m bench.query_embedding_threads --locomo ../shared/eval-data/locomo-dev.json
[--conversations 2] [--rounds 3] [--pause-ms 4] [--no-record]`: a query's embedding on
the served graph under three thread configurations, each alone and with two processes
embedding at once (two gunicorn workers), in the same run.

The configurations (`memory_app.embedding_session.session_options`): one intra-op thread;
two threads that sleep between operators; two threads that spin between operators for
ONNX Runtime's own duration, and for SPIN_MICROSECONDS (the served one); the spinning
ones stop when the run returns. Each configuration runs in processes of its own:
a pool's spinning threads would take the core from another session in the same process.
One text per call, every question of the first `--conversations` LoCoMo dev
conversations, with a pause of `--pause-ms` after each (a search's database work between
two embeddings). Each round runs every configuration alone, then as a pair of processes
started together, the configurations' order reversed every round. Reported per
configuration: p50 / p95 of a call, alone and in pairs, and CPU milliseconds per query
(the process's user and system time over its measured calls and pauses, all its threads):
a thread that spins on after a run shows there.

The graph is the installation's fp32 graph (the attention-fused one,
`memory_app.embedding_fused`), exported and derived first if missing. No database is
opened. Recorded in bench/RESULTS.md (section EMBED_THREADS) unless `--no-record`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.harness import BenchResult, command_line, log, record
from bench.percentiles import percentile
from bench.query_embedding_graphs import PACKAGES, WARM_UP, questions
from memory_app.embedding_session import SPIN_MICROSECONDS

ROOT = Path(__file__).resolve().parents[1]
ID = "EMBED_THREADS"
TITLE = "Query embedding: runtime threads that spin while a run lasts, against sleeping ones"
# name: (intra-op threads, microseconds a thread spins before it sleeps: 0 none, None
# the runtime's own duration)
CONFIGS: dict[str, tuple[int, int | None]] = {
    "one thread": (1, 0),
    "two threads, asleep between operators": (2, 0),
    "two threads, spinning the runtime's own duration": (2, None),
    f"two threads, spinning {SPIN_MICROSECONDS} µs (served)": (2, SPIN_MICROSECONDS),
}


def worker(
    graph: Path, texts: list[str], threads: int, spin_microseconds: int | None, pause: float
) -> None:
    """One configuration in this process: every text once after the warm-up, one a call,
    each call followed by `pause` seconds; prints the milliseconds of each call and the
    process's CPU seconds over the measured loop as JSON."""
    from memory_app.embedding_session import OnnxSentenceModel, model_dir

    model = OnnxSentenceModel(graph, model_dir(), threads, spin_microseconds=spin_microseconds)
    for text in texts[:WARM_UP]:
        model.embed([text])
    began = _cpu_seconds()
    took = []
    for text in texts:
        start = time.perf_counter()
        model.embed([text])
        took.append((time.perf_counter() - start) * 1000)
        time.sleep(pause)
    print(json.dumps({"ms": took, "cpu_s": _cpu_seconds() - began}))


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _workers(name: str, count: int, args: argparse.Namespace, graph: Path) -> list[dict]:
    """`count` worker processes of configuration `name` started together; their output."""
    command = [
        sys.executable, "-m", "bench.query_embedding_threads", "--worker", name,
        "--graph", str(graph), "--locomo", str(args.locomo),
        "--conversations", str(args.conversations), "--pause-ms", str(args.pause_ms),
    ]  # fmt: skip
    processes = [
        subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT) for _ in range(count)
    ]
    outputs = [process.communicate()[0] for process in processes]
    for process in processes:
        if process.returncode != 0:
            raise RuntimeError(f"worker {name!r} exited {process.returncode}")
    return [json.loads(output.strip().splitlines()[-1]) for output in outputs]


def measure(args: argparse.Namespace, graph: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """Each configuration's calls and CPU time, alone and in pairs, over every round."""
    runs: dict[str, dict[str, dict[str, Any]]] = {
        name: {mode: {"ms": [], "cpu_s": 0.0} for mode in ("alone", "pairs")} for name in CONFIGS
    }
    for number in range(args.rounds):
        order = list(CONFIGS) if number % 2 == 0 else list(CONFIGS)[::-1]
        for name in order:
            for mode, count in (("alone", 1), ("pairs", 2)):
                for output in _workers(name, count, args, graph):
                    runs[name][mode]["ms"] += output["ms"]
                    runs[name][mode]["cpu_s"] += output["cpu_s"]
            alone = runs[name]["alone"]["ms"]
            log(f"[threads] round {number} {name}: alone p50 {percentile(alone, 50):.2f} ms, "
                f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    return runs


def summarise(runs: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    return {
        name: {
            mode: {
                "p50_ms": round(percentile(run["ms"], 50), 2),
                "p95_ms": round(percentile(run["ms"], 95), 2),
                "cpu_ms_per_query": round(1000 * run["cpu_s"] / len(run["ms"]), 2),
                "queries": len(run["ms"]),
            }
            for mode, run in modes.items()
        }
        for name, modes in runs.items()
    }


def markdown(data: dict[str, Any]) -> str:
    lines = [
        f"{data['questions']} LoCoMo dev questions (the first {data['conversations']} "
        f"conversations), {data['rounds']} rounds, one question per call through "
        f"`OnnxSentenceModel` on `{data['graph']}`, {data['pause_ms']} ms pause after each "
        f"call. Each configuration in processes of its own: alone, then two processes "
        f"started together (pairs). CPU: the process's user + system time over its calls "
        f"and pauses, per query. Load average (1 min) before / after: "
        f"{data['load_before']:.1f} / {data['load_after']:.1f}.",
        "",
        "| configuration | alone p50 ms | alone p95 ms | alone CPU ms/query "
        "| pairs p50 ms | pairs p95 ms | pairs CPU ms/query |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, modes in data["configurations"].items():
        alone, pairs = modes["alone"], modes["pairs"]
        lines.append(
            f"| {name} | {alone['p50_ms']} | {alone['p95_ms']} | {alone['cpu_ms_per_query']} "
            f"| {pairs['p50_ms']} | {pairs['p95_ms']} | {pairs['cpu_ms_per_query']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.query_embedding_threads", description=__doc__
    )
    parser.add_argument("--locomo", type=Path, required=True, help="locomo-dev.json")
    parser.add_argument("--conversations", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pause-ms", type=float, default=4.0)
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--worker", choices=list(CONFIGS), help=argparse.SUPPRESS)
    parser.add_argument("--graph", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    texts = questions(args.locomo, args.conversations)
    if args.worker:
        threads, spin_microseconds = CONFIGS[args.worker]
        worker(args.graph, texts, threads, spin_microseconds, args.pause_ms / 1000)
        return 0
    # Settings only (the cache directory): no app, no database.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    from django.conf import settings

    from memory_app.embedding_fused import ensure_fused
    from memory_app.embedding_onnx import ensure_exported
    from memory_app.embedding_session import model_dir

    folder = model_dir()
    exported = ensure_exported(Path(settings.ENGRAM_EMBEDDING_ONNX_DIR), folder, progress=log)
    graph = ensure_fused(exported, folder, progress=log)
    log(f"[threads] {len(texts)} questions x {args.rounds} rounds, {len(CONFIGS)} configurations")
    load_before = os.getloadavg()[0]
    runs = measure(args, graph)
    data = {
        "configurations": summarise(runs),
        "questions": len(texts),
        "conversations": args.conversations,
        "rounds": args.rounds,
        "pause_ms": args.pause_ms,
        "graph": graph.name,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }
    for name, modes in data["configurations"].items():
        log(f"[threads] {name}: {modes}")
    command = command_line("bench.query_embedding_threads", argv)
    result = BenchResult(ID, TITLE, markdown(data), data)
    path = record(result, command, update=not args.no_record, database=False, packages=PACKAGES)
    log(f"[threads] raw: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
