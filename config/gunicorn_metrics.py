"""Gunicorn server hooks for Prometheus multiprocess mode (`sessions_app.metrics`).

Use as `gunicorn -c config/gunicorn_metrics.py …`, or import these two functions into
another gunicorn config. With PROMETHEUS_MULTIPROC_DIR set, every worker writes its
samples to files there; the folder must start empty (stale files of a previous run would
be added to the new counts) and a dead worker's live gauges are retired.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any


def on_starting(server: Any) -> None:
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
        Path(folder).mkdir(parents=True, exist_ok=True)


def child_exit(server: Any, worker: Any) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]  # an untyped third-party function
