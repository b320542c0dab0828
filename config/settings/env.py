"""Reading settings from the environment, with typed helpers and safe development defaults."""

from __future__ import annotations

import json
import os
from typing import Any


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw not in (None, "") else default


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
