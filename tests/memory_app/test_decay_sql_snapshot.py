"""The statement that rescores memories' decay, as text: rendered on the test database's
connection and compared with snapshots/decay/rescore_batch.sql, so a change to it shows
in review. After an intended change: `ENGRAM_UPDATE_SNAPSHOTS=1 python -m pytest
tests/memory_app/test_decay_sql_snapshot.py`, then review the diff of the .sql file."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_app.services.decay import HALF_LIFE_DAYS, decay_statement
from tests.sql_snapshots import assert_matches_snapshot

pytestmark = pytest.mark.django_db


def test_decay_statement_matches_its_snapshot() -> None:
    statement, case_params = decay_statement()
    assert_matches_snapshot(
        Path(__file__).parent / "snapshots" / "decay", "rescore_batch", statement
    )
    # One (type, days) pair of parameters per WHEN of the CASE, in the table's order.
    assert case_params == [
        value for memory_type, days in HALF_LIFE_DAYS.items() for value in (str(memory_type), days)
    ]
