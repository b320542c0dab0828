from __future__ import annotations

from django.db import transaction
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from config.schedules import SCHEDULE


@transaction.atomic
def schedules_sync() -> list[str]:
    """Create the periodic tasks that are missing; keep operators' edits to existing ones."""
    for entry in SCHEDULE:
        interval, _ = IntervalSchedule.objects.get_or_create(
            every=entry.every, period=IntervalSchedule.SECONDS
        )
        task, created = PeriodicTask.objects.get_or_create(
            name=entry.name,
            defaults={
                "task": entry.task,
                "interval": interval,
                "expire_seconds": entry.expires,
                "description": entry.description,
            },
        )
        if not created and task.task != entry.task:
            task.task = entry.task
            task.save(update_fields=["task"])
    return [entry.name for entry in SCHEDULE]
