"""Every periodic task of the cockpit is declared once, with an expiry, and reaches beat."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django_celery_beat.models import PeriodicTask

from config.celery_app import app
from config.schedules import SCHEDULE


def test_cockpit_tasks_are_scheduled_with_an_expiry_shorter_than_their_period() -> None:
    app.loader.import_default_modules()  # what a worker does at start: autodiscovery
    entries = {entry.task: entry for entry in SCHEDULE}
    assert {"analytics_app.rollups_fill", "analytics_app.runaway_scan"} <= set(entries)
    assert entries["analytics_app.runaway_scan"].every == 60
    for entry in SCHEDULE:
        assert entry.task in app.tasks, entry.task
        assert 0 < entry.expires < entry.every
        assert app.tasks[entry.task].acks_late


@pytest.mark.django_db
def test_sync_schedules_writes_them_into_beat() -> None:
    call_command("sync_schedules")
    scan = PeriodicTask.objects.get(task="analytics_app.runaway_scan")
    assert scan.interval.every == 60 and scan.expire_seconds == 50


def test_every_task_is_named_after_the_app_that_defines_it() -> None:
    """One prefix scheme: `<app label>.<task>`, so a task's name says where its code is."""
    app.loader.import_default_modules()
    ours = {
        name: task
        for name, task in app.tasks.items()
        if task.__module__.split(".")[0] in {"sessions_app", "memory_app", "analytics_app"}
    }
    assert len(ours) >= 10  # expire, purge, compact, extract x2, decay, rollups, runaway x3
    for name, task in ours.items():
        assert name.split(".")[0] == task.__module__.split(".")[0], name
