"""The embedding cache's files (the ONNX export and the graphs derived from it), each made
once per installation: gunicorn workers and Celery starting together into an empty cache
must not all spend the seconds a file takes, nor read one half written.

A file is made under one exclusive lock for the whole cache (`.export.lock`), written to a
temporary name and renamed into place only once its maker has checked it; a caller that
finds it there returns at once, one that waited on the lock finds the first one's file.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from pathlib import Path


def publish_once(target: Path, make: Callable[[Path], None]) -> Path:
    """`target`, calling `make(partial)` first if no process has published it: `make`
    writes and checks the file at `partial` (raising if it is not fit to serve), and it is
    then renamed to `target`. Nothing is left at `partial` either way."""
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".export.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if target.exists():  # another process made it while we waited
                return target
            partial = target.with_suffix(f".{os.getpid()}.partial")
            try:
                make(partial)
                os.replace(partial, target)
            finally:
                partial.unlink(missing_ok=True)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return target
