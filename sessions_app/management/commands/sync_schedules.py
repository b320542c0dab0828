from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from sessions_app.services.schedules import schedules_sync


class Command(BaseCommand):
    help = "Write the periodic tasks declared in code into django-celery-beat's tables."

    def handle(self, *args: Any, **options: Any) -> None:
        names = schedules_sync()
        self.stdout.write(f"{len(names)} periodic task(s) in the schedule: {', '.join(names)}")
