"""Snapshot comparison of generated SQL: a statement rendered with `as_string` on the test
database's connection must equal its .sql file, so a change to the SQL shows in review
as a change to that file. `ENGRAM_UPDATE_SNAPSHOTS=1` rewrites the files instead (then
review their diff)."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from django.db import connection
from psycopg import sql

UPDATE = os.environ.get("ENGRAM_UPDATE_SNAPSHOTS") == "1"


def rendered(statement: sql.Composable) -> str:
    """The statement as PostgreSQL receives it from this connection (quoting, encoding)."""
    connection.ensure_connection()
    return statement.as_string(connection.connection).strip() + "\n"


def assert_matches_snapshot(folder: Path, name: str, statement: sql.Composable) -> None:
    path = folder / f"{name}.sql"
    text = rendered(statement)
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return
    assert path.exists(), f"no snapshot {path}: run with ENGRAM_UPDATE_SNAPSHOTS=1"
    expected = path.read_text()
    diff = "".join(
        difflib.unified_diff(expected.splitlines(True), text.splitlines(True), str(path), "now")
    )
    assert text == expected, f"the SQL of {name} changed:\n{diff}"
