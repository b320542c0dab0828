"""`/healthz`: is each dependency reachable? 200 when all are, 503 otherwise."""

from __future__ import annotations

import time
from collections.abc import Callable

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET


def _check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    return f"pgvector {row[0]}" if row else "up, pgvector missing"


def _check_broker() -> str:
    client = redis.Redis.from_url(
        settings.CELERY_BROKER_URL, socket_connect_timeout=2, socket_timeout=2
    )
    try:
        client.ping()
    finally:
        client.close()
    return "pong"


def _check_embedder() -> str:
    from memory_app.embedding import embedder

    backend = embedder()
    vector = backend.embed(["health check"])[0]
    return f"{backend.model_name} on {backend.runtime} ({len(vector)} dimensions)"


CHECKS: dict[str, Callable[[], str]] = {
    "database": _check_database,
    "broker": _check_broker,
    "embedder": _check_embedder,
}


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    results: dict[str, dict[str, object]] = {}
    healthy = True
    for name, check in CHECKS.items():
        started = time.perf_counter()
        try:
            detail = check()
            ok = not detail.endswith("missing")
        except Exception as exc:  # a health check reports every failure, whatever it is
            detail, ok = f"{type(exc).__name__}: {exc}", False
        healthy &= ok
        results[name] = {
            "ok": ok,
            "detail": detail,
            "ms": round((time.perf_counter() - started) * 1000, 1),
        }
    return JsonResponse(
        {"status": "ok" if healthy else "degraded", "checks": results},
        status=200 if healthy else 503,
    )
