"""What every benchmark gets (`BenchContext`) and gives back (`BenchResult`), and how the
results are written: raw JSON under bench/out/, a section per benchmark in RESULTS.md.

A benchmark is a module under bench/ with `ID`, `TITLE` and `run(ctx) -> BenchResult`,
listed in `bench.run.BENCHMARKS`. It measures its subject and a baseline in the same run
and reports ratios: the machine is small and shared, so absolute figures drift from run
to run while ratios hold.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_PATH = BENCH_DIR / "RESULTS.md"
OUT_DIR = BENCH_DIR / "out"

Size = Literal["short", "full"]


@dataclass
class BenchContext:
    """The run's size, where the servers are, and the environment for subprocesses
    (gunicorn) so that they use the same database with production settings."""

    size: Size
    database_url: str
    redis_url: str
    server_env: dict[str, str]
    nproc: int
    log: Callable[[str], None]
    datasets_done: set[Any] = field(default_factory=set)

    def ensure_dataset(self, spec: Any) -> None:
        """Generate `spec` once per run; benchmarks that share a spec share the data."""
        from bench.generate import generate

        if spec in self.datasets_done:
            return
        started = time.monotonic()
        generate(spec, progress=self.log)
        self.datasets_done.add(spec)
        self.log(f"[dataset] ready in {time.monotonic() - started:.1f}s")


@dataclass
class BenchResult:
    """`markdown` is the benchmark's own table and notes; `data` its raw figures."""

    id: str
    title: str
    markdown: str
    data: dict[str, Any]


class Benchmark(Protocol):
    ID: str
    TITLE: str

    def run(self, ctx: BenchContext) -> BenchResult: ...


def log(message: str) -> None:
    stamp = time.strftime("%H:%M:%S")
    print(f"{stamp} {message}", file=sys.stderr, flush=True)


@contextmanager
def step(ctx_log: Callable[[str], None], what: str) -> Iterator[None]:
    started = time.monotonic()
    ctx_log(f"{what} …")
    yield
    ctx_log(f"{what}: {time.monotonic() - started:.1f}s")


# --- Environment ---------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float:
    import psutil

    return round(psutil.virtual_memory().total / 2**30, 1)


def environment(
    command: str, *, database: bool = True, packages: Sequence[str] = ()
) -> dict[str, Any]:
    """Machine and versions, read from the running system: the database's unless
    `database` is off (a benchmark that opens none), and the installed `packages`' (the
    distributions a benchmark measures, e.g. onnxruntime)."""
    import django

    info: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "cpu": _cpu_model(),
        "python": platform.python_version(),
        "django": django.get_version(),
    }
    if database:
        info |= _database_versions()
    if packages:
        info["packages"] = {name: importlib.metadata.version(name) for name in packages}
    return info | {"command": command}


def _database_versions() -> dict[str, str]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        postgres = cursor.fetchone()[0]
        cursor.execute(
            "SELECT coalesce((SELECT extversion FROM pg_extension WHERE extname = 'vector'),"
            " (SELECT default_version FROM pg_available_extensions WHERE name = 'vector'))"
        )
        pgvector = cursor.fetchone()[0]
    return {"postgresql": postgres, "pgvector": pgvector}


def environment_markdown(env: dict[str, Any]) -> str:
    versions = [f"Python {env['python']}", f"Django {env['django']}"]
    if "postgresql" in env:
        versions += [f"PostgreSQL {env['postgresql']}", f"pgvector {env['pgvector']}"]
    versions += [f"{name} {version}" for name, version in env.get("packages", {}).items()]
    return (
        f"- Date: {env['date']}\n"
        f"- Machine: {env['nproc']} CPUs ({env['cpu']}), {env['memory_gib']} GiB memory; "
        "shared and noisy, so compare ratios, not absolute figures\n"
        f"- Versions: {', '.join(versions)}\n"
        f"- Command: `{env['command']}`\n"
    )


# --- Output --------------------------------------------------------------------------

RESULTS_HEADER = """# Benchmark results

Written by `python -m bench.run` (`make bench`, `make bench-full`): each benchmark's
section between its markers is replaced when it runs again; text outside the markers is
kept. Raw figures are in `bench/out/` (not committed). How to read them: every figure is
measured next to a baseline in the same run, on a 2-core shared machine, so the ratios
are what to compare between runs.
"""


def write_json(result: BenchResult, env: dict[str, Any]) -> Path:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = OUT_DIR / f"{result.id}-{stamp}.json"
    payload = {"id": result.id, "title": result.title, "environment": env, **result.data}
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return path


def command_line(module: str, argv: Sequence[str] | None) -> str:
    """How a benchmark was run, for its record's header: `python -m <module>` and its
    arguments (`argv`, else the process's own)."""
    return " ".join(["python -m " + module, *(argv if argv is not None else sys.argv[1:])])


def record(
    result: BenchResult,
    command: str,
    *,
    update: bool = True,
    database: bool = True,
    packages: Sequence[str] = (),
) -> Path:
    """What a benchmark run by itself (not through `bench.run`) does with its result: the
    raw JSON under bench/out, and unless `update` is off its section in RESULTS.md, headed
    by `environment(command, database=…, packages=…)`. Returns the JSON's path."""
    info = environment(command, database=database, packages=packages)
    path = write_json(result, info)
    if update:
        update_results(result, info)
    return path


def update_results(result: BenchResult, env: dict[str, Any], path: Path = RESULTS_PATH) -> None:
    """Replace the benchmark's section (between its markers) or append it."""
    begin, end = f"<!-- BEGIN {result.id} -->", f"<!-- END {result.id} -->"
    section = (
        f"{begin}\n## {result.id}: {result.title}\n\n"
        f"{environment_markdown(env)}\n{result.markdown.strip()}\n{end}"
    )
    text = path.read_text() if path.exists() else RESULTS_HEADER
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _match: section, text)
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)
