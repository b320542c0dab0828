"""Reading settings from the environment, with typed helpers and safe development defaults."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw not in (None, "") else default


def embedded_pg_port() -> int:
    """The port of the embedded PostgreSQL `make run` starts (config.devstack), which the
    default DATABASE_URL names too: a `manage.py` command run beside `make run` with the
    same ENGRAM_PG_PORT reaches the same database."""
    return env_int("ENGRAM_PG_PORT", 54329)


def embedded_valkey_port() -> int:
    """The same for the embedded Valkey (ENGRAM_VALKEY_PORT) and the default REDIS_URL."""
    return env_int("ENGRAM_VALKEY_PORT", 63799)


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    return float(raw) if raw not in (None, "") else default


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw in (None, ""):
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw in (None, ""):
        return list(default)
    return [part.strip() for part in raw.split(",") if part.strip()]


def env_int_map(name: str, default: dict[str, int]) -> dict[str, int]:
    """`key=int` pairs separated by commas (`claude=2592000,ollama=604800`); the pairs
    given replace the defaults' entries of the same key, others stay."""
    raw = os.environ.get(name)
    result = dict(default)
    if raw in (None, ""):
        return result
    for part in raw.split(","):
        if not part.strip():
            continue
        key, _, value = part.partition("=")
        result[key.strip().lower()] = int(value)
    return result


def env_json(name: str, default: Any) -> Any:
    """A JSON value (e.g. a table of named policies); the default when unset."""
    raw = os.environ.get(name)
    return default if raw in (None, "") else json.loads(raw)


def stored_secret_key(path: Path) -> str:
    """The secret key kept at `path`, generated there on first use.

    Several processes (web workers, Celery) may start at once: the key is written to a
    temporary file and linked into place, which fails if another process won, so every
    process ends up reading the same key. The file is readable by its owner only."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(50))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    key = path.read_text().strip()
    if len(key) < 50:
        raise ValueError(f"{path} holds no usable secret key; delete it to generate one")
    return key
