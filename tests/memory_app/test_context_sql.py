"""The context's SQL, as it reaches PostgreSQL. The context reads through the ORM
(sessions_app's selectors, `memory_app.window.selectors`, `memory_neighbours`) and the
memory search (`memory_search`, whose statements it tests itself); the one raw statement
of its own is the cosine over a found turn's thread window (`window_cosines_statement`),
and the querysets it builds itself are the window's turns and a predecessor's open turns.

The raw statement is rendered with `.as_string()` on the real test database's
connection, the querysets with the ORM's compiler (parameters as `%s`), and each is
compared with its snapshot in `tests/memory_app/snapshots/context/`, so a change to the
SQL shows in review. After an intended change, regenerate the snapshots with
`ENGRAM_UPDATE_SNAPSHOTS=1 python -m pytest tests/memory_app/test_context_sql.py` and
commit them with the change."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from django.db import connection

from memory_app.embedding import embed_query, vector_literal
from memory_app.selectors.context.candidates.predecessors import previous_open_turns_query
from memory_app.selectors.context.candidates.turns import window_turns_query
from memory_app.selectors.context.recall import window_cosines_statement

pytestmark = pytest.mark.django_db

SNAPSHOTS = Path(__file__).parent / "snapshots" / "context"


def _matches_snapshot(name: str, rendered: str) -> None:
    path = SNAPSHOTS / f"{name}.sql"
    if os.environ.get("ENGRAM_UPDATE_SNAPSHOTS") == "1":
        path.write_text(rendered + "\n")
    assert path.exists(), f"no snapshot {path.name}: run with ENGRAM_UPDATE_SNAPSHOTS=1"
    assert rendered + "\n" == path.read_text(), f"{path.name} differs from the statement"


def test_window_cosines_statement_matches_its_snapshot() -> None:
    connection.ensure_connection()
    _matches_snapshot("window_cosines", window_cosines_statement().as_string(connection.connection))


@pytest.mark.parametrize("include_compacted", [False, True])
def test_window_turns_query_matches_its_snapshot(include_compacted: bool) -> None:
    query = window_turns_query(uuid.UUID(int=1), 50, include_compacted)
    name = "window_turns_live" if include_compacted else "window_turns_open"
    _matches_snapshot(name, query.query.sql_with_params()[0])


def test_previous_open_turns_query_matches_its_snapshot() -> None:
    query = previous_open_turns_query(uuid.UUID(int=1))
    _matches_snapshot("previous_open_turns", query.query.sql_with_params()[0])


def test_window_cosines_statement_runs_on_the_real_schema() -> None:
    """The statement is valid against the migrated `memory` table: with no hits it
    answers no rows, and with a hit of an unknown thread none either."""
    params = {
        "q": vector_literal(embed_query("where did we go last summer")),
        "tenant": 1,
        "user": "u-1",
        "before": 1,
        "after": 1,
    }
    with connection.cursor() as cursor:
        cursor.execute(window_cosines_statement(), {**params, "ids": [], "keys": [], "orders": []})
        assert cursor.fetchall() == []
        cursor.execute(
            window_cosines_statement(),
            {
                **params,
                "ids": ["00000000-0000-0000-0000-000000000001"],
                "keys": ["no-such-thread"],
                "orders": [3],
            },
        )
        assert cursor.fetchall() == []
