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
    assert {"analytics.rollups_fill", "analytics.runaway_scan"} <= set(entries)
    assert entries["analytics.runaway_scan"].every == 60
    for entry in SCHEDULE:
        assert entry.task in app.tasks, entry.task
        assert 0 < entry.expires < entry.every
        assert app.tasks[entry.task].acks_late


@pytest.mark.django_db
def test_sync_schedules_writes_them_into_beat() -> None:
    call_command("sync_schedules")
    scan = PeriodicTask.objects.get(task="analytics.runaway_scan")
    assert scan.interval.every == 60 and scan.expire_seconds == 50
