"""mem0 OSS as the bench runs it: its own virtualenv, bench/.mem0-venv (mem0ai pinned in
bench/requirements-mem0.txt), and bench/mem0_worker.py kept running in it, answering one
round of searches at a time."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

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


class Mem0Worker:
    """bench/mem0_worker.py in the mem0 virtualenv, kept running: it ingests the
    conversations once, then answers one round of every question per `search_round()`,
    so that rounds of both sides can alternate."""

    def __init__(self, python: Path, database_url: str, convs: list[Any], k: int) -> None:
        self.python = python
        self.job = {
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
        self.process: subprocess.Popen[str] | None = None

    def __enter__(self) -> Mem0Worker:
        self.process = subprocess.Popen(
            [str(self.python), str(BENCH_DIR / "mem0_worker.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,  # the replies; the worker's progress goes to our stderr
            text=True,
        )
        self.ingest_seconds: list[float] = self._ask(json.dumps(self.job))["ingest_seconds"]
        return self

    def search_round(self) -> list[dict[str, Any]]:
        """Every question once, in order: the turn indexes found and the latency (ms)."""
        answers: list[dict[str, Any]] = self._ask("search")["answers"]
        return answers

    def _ask(self, line: str) -> dict[str, Any]:
        assert self.process is not None and self.process.stdin and self.process.stdout
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        reply = self.process.stdout.readline()
        if not reply:
            raise RuntimeError(f"mem0 worker ended with exit code {self.process.wait()}")
        document: dict[str, Any] = json.loads(reply)
        return document

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            if self.process.stdin:
                self.process.stdin.close()  # end of input: the worker returns
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def mem0_found(convs: list[Any], answers: list[dict[str, Any]]) -> list[list[set[str]]]:
    """mem0's answers (stored turn indexes) as the dia ids of those turns."""
    turns = [conv.turns for conv in convs for _ in conv.questions]
    return [
        [{rows[t].dia_id} if isinstance(t, int) else set() for t in answer["turns"]]
        for rows, answer in zip(turns, answers, strict=True)
    ]


def mem0_version(python: Path) -> str:
    """The mem0ai version installed in the virtualenv of `python`."""
    return subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('mem0ai'))"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
