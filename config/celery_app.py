"""The Celery application. Shared task options live here once; the schedule lives in
`config/schedules.py` and is synced into django-celery-beat's tables by
`manage.py sync_schedules`.

Tasks are named `<app label>.<task>` (e.g. `memory_app.compact_session`). Autodiscovery
imports each app's `tasks.py`; tasks kept elsewhere (`memory_app/window/tasks.py`) are
imported by their app's `AppConfig.ready()`."""

import os
import random
from typing import Any

from celery import Celery, Task

from config.database_errors import DATABASE_CONNECTION_ERRORS, is_connection_lost

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

# Retries after a connection error, apart from a task's own `max_retries`: about three
# minutes in all, long enough for a restart or a failover.
DATABASE_RETRIES = 8
DATABASE_RETRY_MAX_DELAY = 60.0


def database_retry_delay(retries: int) -> float:
    """Seconds before the next run after `retries` connection-error retries: doubling from
    1 s up to a minute, stretched by up to half again at random so that the tasks a restart
    failed together do not all come back at the same moment. Never less than the doubling:
    Celery's full jitter (0 to the backoff) could spend every retry within a second."""
    base = min(DATABASE_RETRY_MAX_DELAY, float(2**retries))
    return base * random.uniform(1.0, 1.5)


class DatabaseRetryTask(Task):
    """Every Engram task: a run that loses its database connection (or cannot get one)
    is retried with backoff (`database_retry_delay`) up to `DATABASE_RETRIES` times,
    instead of failing. Other operational errors (a deadlock, a statement timeout) fail
    as before.

    Retrying is safe because a lost connection rolls back the run's open transaction and
    the tasks are idempotent. Celery's Django fixup closes an unusable connection around
    each task, so the retry runs on a new one."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except DATABASE_CONNECTION_ERRORS as exc:
            retries = int(self.request.retries or 0)
            if (
                not is_connection_lost(exc)
                or self.request.called_directly
                or retries >= DATABASE_RETRIES
            ):
                raise
            try:
                raise self.retry(
                    exc=exc,
                    countdown=database_retry_delay(retries),
                    max_retries=DATABASE_RETRIES,
                ) from exc
            finally:
                # `retry(max_retries=…)` leaves this on the shared task object.
                self.__dict__.pop("override_max_retries", None)


app = Celery("engram", task_cls=DatabaseRetryTask)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Every task: acknowledged after it ran, re-queued if its worker dies, bounded retries
# (connection errors have their own, in DatabaseRetryTask).
TASK_DEFAULTS = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "max_retries": 3,
    "retry_backoff": True,
    "retry_jitter": True,
}
