"""The Celery application. Shared task options live here once; the schedule lives in
`config/schedules.py` and is synced into django-celery-beat's tables by
`manage.py sync_schedules`.

Tasks are named `<app label>.<task>` (e.g. `memory_app.compact_session`). Autodiscovery
imports each app's `tasks.py`; tasks kept elsewhere (`memory_app/window/tasks.py`) are
imported by their app's `AppConfig.ready()`."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("engram")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Every task: acknowledged after it ran, re-queued if its worker dies, bounded retries.
TASK_DEFAULTS = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "max_retries": 3,
    "retry_backoff": True,
    "retry_jitter": True,
}
