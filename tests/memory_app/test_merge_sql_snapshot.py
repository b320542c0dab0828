"""The statement that finds a new memory's merge candidates (`nearest_same_kind`), as
text: rendered on the test database's connection and compared with
snapshots/merge/nearest_same_kind.sql, so a change to it shows in review. After an
intended change: `ENGRAM_UPDATE_SNAPSHOTS=1 python -m pytest
tests/memory_app/test_merge_sql_snapshot.py`, then review the diff of the .sql file."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_app.services.memory_merge import NEAREST_SAME_KIND_SQL
from tests.sql_snapshots import assert_matches_snapshot

pytestmark = pytest.mark.django_db


def test_nearest_same_kind_statement_matches_its_snapshot() -> None:
    assert_matches_snapshot(
        Path(__file__).parent / "snapshots" / "merge", "nearest_same_kind", NEAREST_SAME_KIND_SQL
    )
