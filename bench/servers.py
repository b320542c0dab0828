"""Processes a benchmark run starts: throwaway embedded PostgreSQL + Valkey, and gunicorn.

Everything here binds to 127.0.0.1 and is stopped at exit: by the `with` block that
started it, and by an atexit hook as a second line (Ctrl-C and SIGTERM end in both).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from config.embedded import EmbeddedPostgres, EmbeddedValkey, free_port, port_is_open

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def data_services(log: Callable[[str], None]) -> Iterator[tuple[str, str]]:
    """(DATABASE_URL, REDIS_URL): the environment's when set, else servers of our own
    with their data in a temporary folder, deleted afterwards."""
    database_url = os.environ.get("DATABASE_URL", "")
    redis_url = os.environ.get("REDIS_URL", "")
    started: list[EmbeddedPostgres | EmbeddedValkey] = []
    root: Path | None = None
    owner = os.getpid()

    def stop_all() -> None:
        if os.getpid() != owner:
            return
        while started:
            started.pop().stop()
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)

    atexit.register(stop_all)
    try:
        root = Path(tempfile.mkdtemp(prefix="engram-bench-"))
        if not database_url:
            postgres = EmbeddedPostgres(root / "pg", free_port(), database="engram_bench")
            started.append(postgres)
            log(f"[services] starting embedded PostgreSQL on port {postgres.port}")
            database_url = postgres.start()
        if not redis_url:
            valkey = EmbeddedValkey(root / "valkey", free_port(), persist=False)
            started.append(valkey)
            log(f"[services] starting embedded Valkey on port {valkey.port}")
            redis_url = valkey.start()
        yield database_url, redis_url
    finally:
        if started:
            log("[services] stopping embedded servers")
        stop_all()


class Gunicorn:
    """`gunicorn config.wsgi:application` on 127.0.0.1:<free port>, in its own process
    group so that stopping it stops its workers too."""

    def __init__(
        self,
        *,
        env: dict[str, str],
        workers: int,
        worker_class: str = "gthread",
        threads: int = 4,
        log_path: Path | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.env = env
        self.cwd = cwd or ROOT  # another checkout serves its own code (bench.b1_versus)
        self.workers = workers
        self.worker_class = worker_class
        self.threads = threads
        self.port = free_port()
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def argv(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi:application",
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            str(self.workers),
            "--worker-class",
            self.worker_class,
            "--threads",
            str(self.threads),
            "--keep-alive",
            "30",
            "--log-level",
            "warning",
        ]

    def start(self, timeout: float = 60) -> None:
        log_file = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self.process = subprocess.Popen(
            self.argv,
            cwd=self.cwd,
            env=self.env,
            stdout=log_file,
            stderr=log_file,
            start_new_session=True,
        )
        atexit.register(self.stop)
        deadline = time.monotonic() + timeout
        while not port_is_open(self.port):
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.process.returncode}")
            if time.monotonic() > deadline:
                raise TimeoutError("gunicorn did not start listening")
            time.sleep(0.2)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)

    def worker_pids(self) -> list[int]:
        import psutil

        if self.process is None:
            return []
        return [child.pid for child in psutil.Process(self.process.pid).children()]

    def __enter__(self) -> Gunicorn:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class CeleryWorker:
    """`celery -A config worker` (prefork, `concurrency` processes) in its own process
    group, as `make run` starts it; stopped with the group."""

    def __init__(self, *, env: dict[str, str], concurrency: int = 2) -> None:
        self.env = env
        self.concurrency = concurrency
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> CeleryWorker:
        argv = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-l",
            "warning",
            "--concurrency",
            str(self.concurrency),
        ]
        self.process = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        atexit.register(self.stop)
        return self

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)

    def __exit__(self, *exc: object) -> None:
        self.stop()
