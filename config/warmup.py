"""What a web worker loads as it starts (`config.wsgi`), rather than on the first request
it serves: a fresh worker's first requests would otherwise carry seconds of CPU each, in
latency and in the CPU a load test charges to them.

- The URLconf, and with it every view module (MCP's SDK and its pydantic models among
  them): Django imports it on the first request.
- Celery's tasks (autodiscovery imports each app's `tasks.py`, which import the services
  behind them) and its result backend: Celery finalizes the app on the first publish.
- The modules that receivers import inside their functions (to keep app loading free of
  cycles): `memory_app.services.turn_queue` compiles the extraction patterns on import.

Then what it loaded is moved out of the garbage collector's reach (`gc.freeze()`): the
modules, classes and patterns live as long as the worker, and a full collection would
walk every one of them (~210,000 objects, ~140 ms with every thread of the worker
stopped). It walks only what requests leave behind.
"""

from __future__ import annotations

import gc
from importlib import import_module

# Imported inside the receivers that a recorded turn runs.
RECEIVER_MODULES = ("memory_app.services.turn_queue",)


def worker_warm() -> None:
    """Load the URLconf, Celery's tasks and the receivers' modules, then freeze what is
    loaded out of the collector's reach; call after `django.setup()`."""
    from django.apps import apps
    from django.urls import get_resolver

    from config.celery_app import app

    get_resolver().url_patterns  # noqa: B018  evaluated for its import
    # Autodiscovery's imports, without `loader.import_default_modules()`: that would also
    # run Django's system checks, as a Celery worker does at start.
    app.loader.autodiscover_tasks([config.name for config in apps.get_app_configs()])
    app.finalize(auto=True)
    app.backend  # noqa: B018  created on first use, for the first publish
    for name in RECEIVER_MODULES:
        import_module(name)
    gc.collect()  # what the loading left as garbage is freed, not frozen
    gc.freeze()
