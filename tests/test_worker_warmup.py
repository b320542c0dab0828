"""A web worker loads what the first request would otherwise load, then freezes it out of
the garbage collector's reach (config/warmup.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run in a fresh interpreter: the test process has imported all of it already.
PROBE = """
import gc, json, sys
import config.wsgi
from django.urls import get_resolver
from config.celery_app import app
print(json.dumps({
    "urlconf": "urlconf_module" in get_resolver().__dict__,
    "views": "integrations.views_mcp" in sys.modules,
    "celery_finalized": app.finalized,
    "tasks": "analytics_app.tasks" in sys.modules and "memory_app.tasks" in sys.modules,
    "receivers": "memory_app.services.turn_queue" in sys.modules,
    "frozen_objects": gc.get_freeze_count(),
}))
"""


def test_importing_the_wsgi_application_loads_urls_tasks_and_receiver_modules() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    # What was loaded is out of the collector's reach: a full collection need not walk it.
    assert loaded.pop("frozen_objects") > 100_000
    assert loaded == {
        "urlconf": True,
        "views": True,
        "celery_finalized": True,
        "tasks": True,
        "receivers": True,
    }
