"""The request id of the request being served, and the logging pieces that put it on every
log line (plain or JSON, `ENGRAM_LOG_FORMAT`).

Lives in config (imports no app) so that the logging configuration in settings can name it
and every app's middleware can set it. A context variable rather than a thread local: it is
right under threads (gunicorn gthread) and under asyncio alike.
"""

from __future__ import annotations

import logging
import re
import uuid
from contextvars import ContextVar

from pythonjsonlogger.json import JsonFormatter

NO_REQUEST = "-"
request_id_var: ContextVar[str] = ContextVar("engram_request_id", default=NO_REQUEST)

# Accepted from a client's X-Request-ID: short, printable, no spaces (it goes into logs).
_SANE_ID = re.compile(r"^[A-Za-z0-9._:@/+=-]{1,128}$")


def accept_or_generate(candidate: str | None) -> str:
    """The client's id when it is sane, else a new one."""
    if candidate and _SANE_ID.match(candidate):
        return candidate
    return uuid.uuid4().hex


class RequestIdFilter(logging.Filter):
    """Adds `record.request_id` (or "-" outside a request: Celery, management commands)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        return True


class EngramJsonFormatter(JsonFormatter):
    """One JSON object per line: time, level, logger, message, request_id, and the
    traceback as `exc_info` when there is one."""

    def __init__(self) -> None:
        super().__init__(
            "%(levelname)s %(name)s %(message)s %(request_id)s",
            rename_fields={"levelname": "level", "name": "logger"},
            timestamp=True,
        )


def logging_config(fmt: str, level: str) -> dict[str, object]:
    """Django's LOGGING: every handler line carries the request id."""
    formatters: dict[str, dict[str, object]] = {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s"},
        "json": {"()": "config.request_log.EngramJsonFormatter"},
    }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": "config.request_log.RequestIdFilter"}},
        "formatters": formatters,
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "json" if fmt == "json" else "plain",
                "filters": ["request_id"],
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {"django.db.backends": {"level": "WARNING"}},
    }
