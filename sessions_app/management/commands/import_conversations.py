"""`python manage.py import_conversations FILE --tenant NAME`: past conversations (the
shape `POST /api/v1/conversations/import` takes, one JSON object each, as a JSON list or
JSON Lines) become archived sessions of their users, with a progress bar. Idempotent:
a conversation already imported for its user is skipped, so an interrupted import is
resumed by running it again."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.api.exceptions import flatten_fields
from sessions_app.api.serializers_imports import ConversationImportItemSerializer
from sessions_app.errors import ApplicationError
from sessions_app.services.api_keys import tenant_get_or_create
from sessions_app.services.conversation_import import conversation_import


def _conversations(path: Path) -> Iterator[Any]:
    text = path.read_text()
    if text.lstrip().startswith("["):
        yield from json.loads(text)
        return
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise CommandError(f"line {number}: not JSON ({exc.msg})") from exc


def _bar(done: int, total: int, counts: Counter[str], began: float) -> str:
    width = 30
    filled = width * done // max(1, total)
    rate = done / max(1e-9, time.monotonic() - began)
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    return f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} ({rate:.1f}/s) {summary}"


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="A JSON list or JSON Lines file.")
        parser.add_argument("--tenant", required=True, help="The tenant's name.")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["path"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        try:
            items = list(_conversations(path))
        except json.JSONDecodeError as exc:
            raise CommandError(f"{path}: not JSON ({exc.msg})") from exc
        tenant = tenant_get_or_create(name=options["tenant"])
        counts: Counter[str] = Counter()
        began = time.monotonic()
        for index, raw in enumerate(items):
            outcome, detail = self._import(tenant, raw)
            counts[outcome] += 1
            if detail:
                self.stderr.write(f"\nconversation {index} refused: {detail}")
            self.stderr.write(_bar(index + 1, len(items), counts, began), ending="")
            self.stderr.flush()
        self.stderr.write("")
        self.stdout.write(
            f"{counts['imported']} imported, {counts['existing']} already there, "
            f"{counts['refused']} refused, of {len(items)}."
        )

    def _import(self, tenant: Any, raw: Any) -> tuple[str, str]:
        """("imported" | "existing" | "refused", why it was refused)."""
        if not isinstance(raw, dict):
            return "refused", "not a JSON object"
        serializer = ConversationImportItemSerializer(data=raw)
        if not serializer.is_valid():
            return "refused", json.dumps(flatten_fields(serializer.errors))
        draft = ConversationImportItemSerializer.draft(serializer.validated_data)
        try:
            imported = conversation_import(tenant=tenant, draft=draft)
        except ApplicationError as exc:
            return "refused", json.dumps(exc.fields or exc.message)
        return ("imported" if imported.created else "existing"), ""
