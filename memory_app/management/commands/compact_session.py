"""`manage.py compact_session <session_id> [--force]`: compact one session now."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_app.services.compaction import session_compact
from sessions_app.errors import NotFound


class Command(BaseCommand):
    help = "Summarise a session's older turns (if a threshold is crossed, or always with --force)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("session_id")
        parser.add_argument(
            "--force", action="store_true", help="Compact even if no threshold is crossed."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = session_compact(session_id=options["session_id"], force=options["force"])
        except NotFound as exc:
            raise CommandError(f"Session {options['session_id']} not found.") from exc
        spans = ", ".join(f"{a}-{b}" for a, b in result.spans) or "none"
        self.stdout.write(
            f"{result.status}: {result.turns_compacted} turn(s) compacted, spans {spans}, "
            f"{len(result.condensed_ids)} condensed summary(ies)"
            + (f" ({result.reason})" if result.reason else "")
        )
