"""`manage.py export_steps_jsonl --tenant acme [--session <id>] [--output file]`: the
captured steps as chat-format JSONL for fine-tuning (see `sessions_app.selectors.jsonl`)."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.models import Tenant
from sessions_app.selectors.jsonl import captured_steps, steps_jsonl


class Command(BaseCommand):
    help = "Export captured steps (prompt + completion) as chat-format JSONL."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True, help="Tenant name.")
        parser.add_argument("--session", help="Only this session's steps.")
        parser.add_argument("--output", help="File to write; default standard output.")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(name=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"No tenant named {options['tenant']!r}.")
        filters: dict[str, Any] = {"tenant": tenant}
        if options.get("session"):
            try:
                filters["session_id"] = uuid.UUID(options["session"])
            except ValueError as exc:
                raise CommandError("--session must be a session id (UUID).") from exc
        count = 0
        if options.get("output"):
            with open(options["output"], "w", encoding="utf-8") as out:
                for line in steps_jsonl(captured_steps(**filters)):
                    out.write(line)
                    count += 1
        else:
            for line in steps_jsonl(captured_steps(**filters)):
                self.stdout.write(line, ending="")
                count += 1
        self.stderr.write(f"{count} examples exported.")
