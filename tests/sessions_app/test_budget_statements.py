"""The statements the period budgets' hot paths run (a check and every recorded turn),
rendered by psycopg on the test database and compared with the files under
`snapshots/budgets/`, so that a change to them shows in review.

Regenerate after an intended change: `ENGRAM_UPDATE_SNAPSHOTS=1 pytest
tests/sessions_app/test_budget_statements.py`, then read the diff."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.db import connection
from psycopg import sql

from sessions_app.selectors import spend_budgets as selectors
from sessions_app.services import budget_reservation_fastpath as fastpath
from sessions_app.services import spend_budgets as services
from tests.sql_snapshots import UPDATE

SNAPSHOTS = Path(__file__).parent / "snapshots" / "budgets"
STATEMENTS: dict[str, sql.Composable] = {
    "budgets_applying": selectors.APPLYING_SQL,
    "budgets_applying_locked": selectors.APPLYING_LOCKED_SQL,
    "budgets_figures": selectors.FIGURES_SQL,
    "budget_spend_upsert": services.SPEND_SQL,
    "budget_spend_alerted": services.ALERTED_SQL,
    "budget_reserve_statement": fastpath.RESERVE_STATEMENT,
}
# Several statements in one message (run by the reservation tests, not EXPLAINable).
MESSAGES: dict[str, sql.Composable] = {"budget_reserve": fastpath.RESERVE_SQL}


CLAUSE = re.compile(
    r" (LEFT JOIN|CROSS JOIN|JOIN|FROM|WHERE|ON CONFLICT|RETURNING|SELECT|ORDER BY|GROUP BY) "
)


def readable(text: str) -> str:
    """One clause per line, so a diff shows what changed."""
    return CLAUSE.sub(lambda match: "\n" + match.group(1) + " ", text)


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted({**STATEMENTS, **MESSAGES}))
def test_the_statement_is_the_snapshot(name: str) -> None:
    connection.ensure_connection()
    statement = {**STATEMENTS, **MESSAGES}[name]
    rendered = readable(statement.as_string(connection.connection)) + "\n"
    path = SNAPSHOTS / f"{name}.sql"
    if UPDATE:
        path.write_text(rendered)
    assert path.exists(), f"no snapshot {path.name}: run with ENGRAM_UPDATE_SNAPSHOTS=1"
    assert rendered == path.read_text(), f"{name} changed: regenerate and review the diff"


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(STATEMENTS))
def test_the_statement_is_valid_sql_for_postgresql(name: str) -> None:
    """PostgreSQL parses and plans it (EXPLAIN), with every parameter typed as unknown."""
    statement = STATEMENTS[name].as_string(connection.connection)
    params = {
        "at": "2026-01-31T23:30:00Z", "tenant": 1, "user": "u", "agent": "a", "model": "m",
        "ids": [], "users": [], "agents": [], "models": [], "tokens": [], "costs": [],
        "budget": "00000000-0000-0000-0000-000000000000", "start": "2026-01-31T00:00:00Z",
        "threshold": 50, "id": "00000000-0000-0000-0000-000000000000",
        "session": "00000000-0000-0000-0000-000000000000", "usd": None, "usd_estimate": None,
        "expires": "2026-02-01T00:00:00Z", "session_ok": True,
    }  # fmt: skip
    if name == "budget_reserve_statement":
        params["tokens"] = 1000  # a count here, the steps' counts in the spend upsert
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + statement, params)
        assert cursor.fetchall()


def test_every_snapshot_file_has_a_statement() -> None:
    """A statement removed from the code takes its snapshot with it."""
    if UPDATE:
        pytest.skip("snapshots are being rewritten")
    on_disk = {path.stem for path in SNAPSHOTS.glob("*.sql")}
    assert on_disk == set(STATEMENTS) | set(MESSAGES)
