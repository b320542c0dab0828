"""The SQL the turn log composes outside the ORM, as text: the fast paths of turn
recording (INSERT … RETURNING, COPY, the session lock read, the counter UPDATEs) and the
monthly partition maintenance of `turn_step`. Each statement is rendered on the test
database's connection and compared with its file under snapshots/, so a change to it
shows in review.

After an intended change: `ENGRAM_UPDATE_SNAPSHOTS=1 python -m pytest
tests/sessions_app/test_sql_snapshots.py`, then review the diff of the .sql files.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.db import connection
from psycopg import sql

from sessions_app import fastpaths
from sessions_app.models import ChatTurn, TurnStep
from sessions_app.selectors.spend import WINDOW_FAILURES_SQL
from sessions_app.selectors.step_partitions import (
    DEFAULT_MONTHS_SQL,
    PARTITIONS_SQL,
    newest_id_sql,
)
from sessions_app.services.step_partitions import (
    LOCK_TIMEOUT_SQL,
    partition_name,
    partition_statements,
)
from tests.sql_snapshots import UPDATE, assert_matches_snapshot, rendered

pytestmark = pytest.mark.django_db

SNAPSHOTS = Path(__file__).parent / "snapshots"
JANUARY = partition_name(datetime(2026, 1, 1, tzinfo=UTC))


def fastpath_statements() -> dict[str, sql.Composable]:
    return {
        "insert_turn": fastpaths.insert_statement(ChatTurn, 1),
        "insert_steps_3": fastpaths.insert_statement(TurnStep, 3),
        "copy_turns_with_ids": fastpaths.copy_statement(ChatTurn, True),
        "copy_steps": fastpaths.copy_statement(TurnStep, False),
        "session_lock": fastpaths.session_lock_statement(),
        "save_counters": fastpaths.save_counters_statement(),
        "save_one_counters": fastpaths.save_one_counters_statement(),
        "window_failures": WINDOW_FAILURES_SQL,
    }


def partition_maintenance_statements() -> dict[str, sql.Composable]:
    return {
        "lock_timeout": LOCK_TIMEOUT_SQL,
        "partitions": PARTITIONS_SQL,
        "default_months": DEFAULT_MONTHS_SQL,
        "newest_id": newest_id_sql(JANUARY),
        **partition_statements(JANUARY),
    }


@pytest.mark.parametrize(("name", "statement"), fastpath_statements().items())
def test_fast_path_statement_matches_its_snapshot(name: str, statement: sql.Composable) -> None:
    assert_matches_snapshot(SNAPSHOTS / "fastpaths", name, statement)


@pytest.mark.parametrize(("name", "statement"), partition_maintenance_statements().items())
def test_partition_statement_matches_its_snapshot(name: str, statement: sql.Composable) -> None:
    assert_matches_snapshot(SNAPSHOTS / "partitions", name, statement)


def test_every_snapshot_file_has_a_statement() -> None:
    """A statement removed from the code takes its snapshot with it."""
    if UPDATE:
        pytest.skip("snapshots are being rewritten")
    known = {f"fastpaths/{name}.sql" for name in fastpath_statements()} | {
        f"partitions/{name}.sql" for name in partition_maintenance_statements()
    }
    on_disk = {
        str(path.relative_to(SNAPSHOTS))
        for folder in ("fastpaths", "partitions")
        for path in (SNAPSHOTS / folder).glob("*.sql")
    }
    assert on_disk == known


def test_the_hot_path_runs_the_statements_it_renders_once() -> None:
    """The turn recording path executes cached renderings; they are the snapshots' text."""
    assert rendered(sql.SQL(fastpaths.rows._insert_sql(TurnStep, 3))) == rendered(
        fastpaths.insert_statement(TurnStep, 3)
    )
    assert rendered(sql.SQL(fastpaths.sessions._SAVE_COUNTERS_SQL)) == rendered(
        fastpaths.save_counters_statement()
    )
    assert rendered(sql.SQL(fastpaths.sessions._SAVE_ONE_COUNTERS_SQL)) == rendered(
        fastpaths.save_one_counters_statement()
    )
    assert fastpaths.sessions._session_reader()[0] == fastpaths.session_lock_statement().as_string(
        connection.connection
    )
