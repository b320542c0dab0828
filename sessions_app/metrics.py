"""`GET /metrics`: Prometheus text format for operators.

Two kinds of numbers, so that every value is right whatever the number of server
processes:

- Counted in the process that served the request (request latency per route, turns and
  steps recorded): prometheus_client metrics. Under gunicorn, set PROMETHEUS_MULTIPROC_DIR
  (an empty folder, before the server starts) and every worker writes its samples there;
  a scrape, whichever worker answers it, adds up all of them
  (`config/gunicorn_metrics.py` clears the folder at start and retires dead workers).
  Without it (runserver, one process) the process's own registry is served.
- Read at scrape time from shared state (Celery queue depth in the broker, outbox
  backlog, rollup lag in the database): `scrape_gauge` providers, registered by the app
  that owns the state (analytics_app adds the rollup lag). A provider that fails (broker
  down) is skipped and reported in `engram_scrape_errors`, never a failed scrape.

Access: with ENGRAM_METRICS_TOKEN set, `Authorization: Bearer <token>` is required;
without it, only loopback clients and logged-in staff are served (403 otherwise).
"""

from __future__ import annotations

import hmac
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

REQUEST_SECONDS = Histogram(
    "engram_http_request_duration_seconds",
    "Time to answer a request, by method, route pattern and status.",
    ["method", "route", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
TURNS_RECORDED = Counter("engram_turns_recorded", "Turns recorded (committed).")
STEPS_RECORDED = Counter("engram_steps_recorded", "LLM/tool steps recorded with their turns.")

LOOPBACK = {"127.0.0.1", "::1"}


@dataclass(frozen=True)
class ScrapeGauge:
    name: str
    documentation: str
    read: Callable[[], float | None]  # None: nothing to report


_gauges: dict[str, ScrapeGauge] = {}


def scrape_gauge(name: str, documentation: str, read: Callable[[], float | None]) -> None:
    """Register a value read at each scrape (idempotent by name)."""
    _gauges[name] = ScrapeGauge(name, documentation, read)


class _ScrapeCollector(Collector):
    def collect(self) -> Iterator[GaugeMetricFamily]:
        errors = GaugeMetricFamily(
            "engram_scrape_errors",
            "Values that could not be read in this scrape.",
            labels=["metric"],
        )
        for gauge in _gauges.values():
            try:
                value = gauge.read()
            except Exception as exc:  # a dependency down must not fail the scrape
                logger.warning("metric %s not read: %s", gauge.name, exc)
                errors.add_metric([gauge.name], 1)
                continue
            if value is not None:
                yield GaugeMetricFamily(gauge.name, gauge.documentation, value=value)
        yield errors


_SCRAPE_COLLECTOR = _ScrapeCollector()
MULTIPROCESS = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
if not MULTIPROCESS:
    REGISTRY.register(_SCRAPE_COLLECTOR)


def _registry() -> CollectorRegistry:
    """Multiprocess: a fresh registry that reads every worker's files, per scrape (as
    prometheus_client documents it). One process: its own registry."""
    if not MULTIPROCESS:
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # an untyped third-party function
    registry.register(_SCRAPE_COLLECTOR)
    return registry


def _allowed(request: HttpRequest) -> bool:
    token = str(settings.ENGRAM_METRICS_TOKEN)
    if token:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        return hmac.compare_digest(given.encode(), token.encode())
    user = getattr(request, "user", None)
    if user is not None and user.is_active and user.is_staff:
        return True
    return request.META.get("REMOTE_ADDR", "") in LOOPBACK


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    if not _allowed(request):
        return HttpResponse(
            "metrics: set ENGRAM_METRICS_TOKEN and send it as a Bearer token, or scrape "
            "from loopback\n",
            status=403,
            content_type="text/plain",
        )
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)


class RequestMetricsMiddleware:
    """Times every request by its route pattern (`/api/v1/sessions/<str:session_id>`,
    never the raw path, so the number of series stays bounded); unmatched paths count
    as `unmatched`."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = f"/{match.route}" if match is not None and match.route else "unmatched"
        REQUEST_SECONDS.labels(request.method or "", route, str(response.status_code)).observe(
            time.perf_counter() - started
        )
        return response


def count_turn_recorded(sender: Any, *, turn: Any = None, **kwargs: Any) -> None:
    """`turn_recorded` receiver (after commit): count the turn and its steps."""
    TURNS_RECORDED.inc()
    if turn is not None:
        STEPS_RECORDED.inc(int(getattr(turn, "call_count", 0) or 0))


def _outbox_backlog() -> float:
    from sessions_app.models import OutboxMessage

    return float(OutboxMessage.objects.count())


def _oldest_outbox_age() -> float:
    from django.db.models import Min
    from django.utils import timezone

    from sessions_app.models import OutboxMessage

    oldest = OutboxMessage.objects.aggregate(at=Min("created_at"))["at"]
    return 0.0 if oldest is None else (timezone.now() - oldest).total_seconds()


def _celery_queue_depth() -> float:
    """Messages waiting in the default Celery queue (a Redis list named after it)."""
    import redis
    from celery import current_app

    client = redis.Redis.from_url(
        current_app.conf.broker_url, socket_connect_timeout=1, socket_timeout=1
    )
    try:
        return float(client.llen(current_app.conf.task_default_queue or "celery"))
    finally:
        client.close()


def register_sessions_gauges() -> None:
    scrape_gauge(
        "engram_outbox_backlog",
        "Tasks kept in the outbox, waiting for the broker.",
        _outbox_backlog,
    )
    scrape_gauge(
        "engram_outbox_oldest_age_seconds",
        "Age of the oldest task in the outbox (0 when empty).",
        _oldest_outbox_age,
    )
    scrape_gauge(
        "engram_celery_queue_depth",
        "Messages waiting in the default Celery queue.",
        _celery_queue_depth,
    )
