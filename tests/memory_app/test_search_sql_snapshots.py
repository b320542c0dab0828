"""The statements memory search sends, as text: each one rendered with `as_string` on the
test database's connection and compared with its file under snapshots/search/, so a
change to the SQL shows in review as a change to a .sql file.

A statement's text depends on which filters and visibility branches apply, never on the
values (those are query parameters): the cases below cover every shape the search
builds, for an anonymous actor, an end user with roles and an operator, tenant-wide
and for one user, with and without filters.

To regenerate after an intended change: `ENGRAM_UPDATE_SNAPSHOTS=1 pytest
tests/memory_app/test_search_sql_snapshots.py`, then review the diff of the .sql files.
A snapshot file that no case renders fails the suite too.
"""

from __future__ import annotations

import difflib
import os
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.db import connection
from psycopg import sql

from memory_app.selectors import currency, search_time
from memory_app.selectors.memories import Actor
from memory_app.selectors.search import LexicalQuery, MemoryFilters, SearchWhere, search_where
from memory_app.selectors.search.asked_subject import STATING_SQL
from memory_app.selectors.search.engine import POOL_PER_SIDE
from memory_app.selectors.search.hydration import HIT_ROWS_SQL
from memory_app.selectors.search.lexical import terms_sql
from memory_app.selectors.search.lexical_hits import lexical_hits_sql
from memory_app.selectors.search.pool import pool_statement
from memory_app.selectors.search.vector import nearest_sql
from sessions_app.models import Tenant

pytestmark = pytest.mark.django_db

SNAPSHOTS = Path(__file__).parent / "snapshots" / "search"
UPDATE = os.environ.get("ENGRAM_UPDATE_SNAPSHOTS") == "1"

USER = Actor(user_id="alice", roles=("support",))
ANONYMOUS = Actor()
OPERATOR = Actor(operator=True)
# Every filter set: each adds its own predicate.
ALL_FILTERS = MemoryFilters(
    session_id=uuid.UUID(int=1),
    created_from=datetime(2024, 1, 1, tzinfo=UTC),
    created_to=datetime(2025, 1, 1, tzinfo=UTC),
    pinned=True,
    scope="shared",
    decay_below=0.5,
    min_importance=0.1,
    min_confidence=0.2,
    metadata={"project": "kayak"},
    sources=("chat",),
    exclude_sources=("import",),
    exclude_session_id=uuid.UUID(int=2),
    valid_at=datetime(2024, 6, 1, tzinfo=UTC),
)
# The time filters alone: the creation window and the validity instant.
TIME_FILTERS = MemoryFilters(
    created_from=datetime(2024, 1, 1, tzinfo=UTC),
    created_to=datetime(2025, 1, 1, tzinfo=UTC),
    valid_at=datetime(2024, 6, 1, tzinfo=UTC),
)
# The time-only search's filter (`within_reach`): when what a memory tells began.
DATED_FILTERS = MemoryFilters(
    dated_from=datetime(2021, 5, 1, tzinfo=UTC), dated_to=datetime(2021, 7, 2, tzinfo=UTC)
)
# Two terms that score, one of which finds candidates; the actor's own branch finds by both.
LEXICAL = LexicalQuery(["kayak", "lake"], [2.0, 0.5], 6.0, ["kayak"], ["kayak", "lake"])


def _where(
    tenant: Tenant,
    actor: Actor,
    user_id: str | None = None,
    filters: MemoryFilters | None = None,
    narrowed: bool = False,
) -> SearchWhere:
    """The search's filters; `narrowed`: also an agent, types and tags."""
    where, _ = search_where(
        tenant=tenant,
        actor=actor,
        user_id=user_id,
        agent_id="planner" if narrowed else None,
        types=["fact", "episodic"] if narrowed else None,
        tags=["travel"] if narrowed else None,
        filters=filters,
    )
    return where


def _pool(
    vector: bool,
    lexical: bool,
    actor: Actor,
    user_id: str | None = None,
    filters: MemoryFilters | None = None,
    narrowed: bool = False,
    speakers: bool = False,
) -> Callable[[Tenant], sql.Composable]:
    """The pool's statement (with its HNSW settings when the vector step runs);
    `speakers`: the query names someone, so each member says whether it is its speaker.
    A hybrid search's pool reads its members' lexemes, as the engine asks it to."""

    def build(tenant: Tenant) -> sql.Composable:
        where = _where(tenant, actor, user_id, filters, narrowed)
        return pool_statement(
            where,
            vector=vector,
            lexical=LEXICAL if lexical else None,
            candidates=POOL_PER_SIDE,
            speakers=speakers,
            lexemes=vector and lexical,
        )

    return build


CASES: dict[str, Callable[[Tenant], sql.Composable]] = {
    # The pool: the statement of the vector step, the lexical step, or both.
    "pool_hybrid_tenant_wide_user": _pool(True, True, actor=USER),
    "pool_hybrid_tenant_wide_anonymous": _pool(True, True, actor=ANONYMOUS),
    "pool_hybrid_tenant_wide_operator": _pool(True, True, actor=OPERATOR),
    "pool_hybrid_own_memories": _pool(True, True, actor=USER, user_id="alice"),
    "pool_hybrid_other_users_memories": _pool(True, True, actor=USER, user_id="bob"),
    "pool_hybrid_all_filters": _pool(True, True, actor=USER, filters=ALL_FILTERS, narrowed=True),
    "pool_hybrid_own_memories_all_filters": _pool(
        True, True, actor=USER, user_id="alice", filters=ALL_FILTERS, narrowed=True
    ),
    "pool_hybrid_time_filters": _pool(True, True, actor=USER, filters=TIME_FILTERS),
    "pool_hybrid_own_memories_dated": _pool(
        True, True, actor=USER, user_id="alice", filters=DATED_FILTERS
    ),
    "pool_hybrid_own_memories_speakers": _pool(
        True, True, actor=USER, user_id="alice", speakers=True
    ),
    "pool_vector_tenant_wide_user": _pool(True, False, actor=USER),
    "pool_vector_own_memories": _pool(True, False, actor=USER, user_id="alice"),
    "pool_lexical_tenant_wide_user": _pool(False, True, actor=USER),
    "pool_lexical_own_memories": _pool(False, True, actor=USER, user_id="alice"),
    # Its parts on their own, as the tests and the benchmark run them.
    "nearest_tenant_wide_user": lambda tenant: nearest_sql(_where(tenant, USER)),
    "lexical_hits_tenant_wide_user": lambda tenant: lexical_hits_sql(_where(tenant, USER), LEXICAL),
    "lexical_hits_other_users_memories": lambda tenant: lexical_hits_sql(
        _where(tenant, USER, user_id="bob"), LEXICAL
    ),
    # The query's terms and their statistics, which bound the lexical step.
    "lexical_terms_tenant": lambda tenant: terms_sql(user=False, own=False),
    "lexical_terms_tenant_and_own": lambda tenant: terms_sql(user=False, own=True),
    "lexical_terms_one_user": lambda tenant: terms_sql(user=True, own=False),
    # After the pool: the time boost, the current-state weighting, the hits' rows.
    "time_boost": lambda tenant: search_time.TIME_PARTS_SQL,
    "not_current": lambda tenant: currency.NOT_CURRENT_SQL,
    "asked_subject_stating": lambda tenant: STATING_SQL,
    "hit_rows": lambda tenant: HIT_ROWS_SQL,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_statement_is_its_snapshot(tenant: Tenant, name: str) -> None:
    connection.ensure_connection()
    rendered = CASES[name](tenant).as_string(connection.connection) + "\n"
    path = SNAPSHOTS / f"{name}.sql"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rendered)
    assert path.exists(), f"no snapshot {path.name}: run with ENGRAM_UPDATE_SNAPSHOTS=1"
    expected = path.read_text()
    diff = "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            rendered.splitlines(keepends=True),
            f"snapshot {path.name}",
            "rendered",
        )
    )
    assert rendered == expected, f"the SQL changed (ENGRAM_UPDATE_SNAPSHOTS=1 to accept):\n{diff}"


def test_every_snapshot_is_a_statement_the_search_renders() -> None:
    stale = {path.stem for path in SNAPSHOTS.glob("*.sql")} - set(CASES)
    if UPDATE:
        for name in stale:
            (SNAPSHOTS / f"{name}.sql").unlink()
        stale = set()
    assert not stale, f"snapshots no case renders: {sorted(stale)}"


def test_a_changed_statement_fails_its_snapshot(tenant: Tenant) -> None:
    # The comparison is of the whole text: one more filter is a different statement.
    connection.ensure_connection()
    plain = CASES["pool_hybrid_tenant_wide_user"](tenant).as_string(connection.connection)
    pinned = _pool(True, True, actor=USER, filters=MemoryFilters(pinned=True))(tenant)
    assert pinned.as_string(connection.connection) != plain
    assert plain + "\n" == (SNAPSHOTS / "pool_hybrid_tenant_wide_user.sql").read_text()
