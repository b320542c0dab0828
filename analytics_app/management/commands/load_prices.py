from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from analytics_app.services.prices import prices_load


class Command(BaseCommand):
    help = (
        "Load model prices from the bundled genai-prices data (offline) and the committed "
        "snapshot; refreshes rows this command wrote, keeps rows operators entered."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        result = prices_load()
        self.stdout.write(
            f"prices: {result.created} created, {result.updated} refreshed, "
            f"{result.kept} kept (edited by an operator)"
        )
