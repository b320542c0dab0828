"""analytics_app reads the turn log through sessions_app selectors: its own code names no
sessions table in SQL (import-linter guards the Python imports; this guards the SQL)."""

from __future__ import annotations

import re
from pathlib import Path

import analytics_app

SESSIONS_TABLES = ("turn_step", "chat_turn", "chat_session", "session_component")
SQL_READ = re.compile(rf"\b(?:FROM|JOIN)\s+({'|'.join(SESSIONS_TABLES)})\b")


def test_analytics_sql_names_no_sessions_table() -> None:
    root = Path(analytics_app.__file__).parent
    found = [
        f"{path.relative_to(root)}: {match.group(0)}"
        for path in sorted(root.rglob("*.py"))
        if "migrations" not in path.parts
        for match in SQL_READ.finditer(path.read_text())
    ]
    assert found == []
