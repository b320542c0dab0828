from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from sessions_app.services.demo import demo_load


class Command(BaseCommand):
    help = "Load the demo tenant, admin user, API key and demo data (once)."

    def handle(self, *args: Any, **options: Any) -> None:
        credentials = demo_load(
            admin_username=settings.ENGRAM_DEMO_ADMIN_USERNAME,
            admin_password=settings.ENGRAM_DEMO_ADMIN_PASSWORD,
        )
        if credentials is None:
            self.stdout.write("Demo data already loaded; keeping it.")
            return
        base = settings.ENGRAM_PUBLIC_BASE_URL.rstrip("/")
        bar = "=" * 72
        self.stdout.write(
            f"\n{bar}\nDemo loaded. These are shown once:\n"
            f"  admin:    {base}/admin/  user '{credentials.username}'"
            f"  password '{credentials.password}'\n"
            f"  API key:  {credentials.api_key}\n"
            f"  try:      curl -H 'Authorization: Bearer {credentials.api_key}' "
            f"{base}/api/v1/sessions\n{bar}\n"
        )
