"""Import a provider's usage or cost export file for reconciliation (as POST /usage/imports)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analytics_app.provider_exports import FORMATS
from analytics_app.services.reconciliation import provider_usage_import
from sessions_app.errors import InvalidInput
from sessions_app.selectors.sessions import tenant_by_name


class Command(BaseCommand):
    help = "Import a provider's usage/cost export (JSON file) for GET /usage/reconciliation."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="The export file.")
        parser.add_argument("--tenant", required=True, help="Tenant name.")
        parser.add_argument("--format", required=True, choices=FORMATS, dest="export_format")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_by_name(options["tenant"])
        if tenant is None:
            raise CommandError(f"No tenant named {options['tenant']!r}.")
        try:
            document = json.loads(Path(options["path"]).read_text())
        except (OSError, ValueError) as exc:
            raise CommandError(f"Cannot read {options['path']}: {exc}") from exc
        try:
            result = provider_usage_import(
                tenant=tenant, export_format=options["export_format"], document=document
            )
        except InvalidInput as exc:
            lines = [f"{field}: {'; '.join(errors)}" for field, errors in exc.fields.items()]
            raise CommandError("Nothing imported.\n" + "\n".join(lines)) from exc
        self.stdout.write(
            f"{result.rows} rows of {result.provider} from {result.first_day} to {result.last_day}"
        )
