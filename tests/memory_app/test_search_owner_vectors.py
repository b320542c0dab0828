"""The vector step over one owner's memories reads them from an index of the owner's
rows, not the table, even where that user holds the whole table and a sequential scan
is costed lower (memory_app.selectors.search.vector, `_OWNER_ROWS`); and the search
ranks exactly as the plain statement, without that range, does."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from psycopg import sql

from memory_app.embedding import vector_literal
from memory_app.selectors.memories import Actor
from memory_app.selectors.search import memory_search, search_where, vector
from memory_app.selectors.search.engine import SearchOutcome
from memory_app.selectors.search.vector import nearest_sql
from memory_app.services.memories import MemoryDraft, memory_add_many
from sessions_app.models import Tenant

# VACUUM, which sets the visibility map an index-only scan relies on, runs outside a
# transaction.
pytestmark = pytest.mark.django_db(transaction=True)

TOPICS = ["kayak", "pottery", "tax return", "puppy", "marathon", "sourdough", "guitar"]
QUERIES = ["Which boat did I paddle?", "How is the dog doing?", "bread baking tips"]
ANA = Actor(user_id="ana")


@pytest.fixture
def one_users_table(tenant: Tenant) -> Tenant:
    """Ana's memories are every row of the table, vacuumed and counted as autovacuum
    leaves a table: the shape where the planner costs a sequential scan below the
    covering index."""
    drafts = [
        MemoryDraft(
            user_id="ana",
            type="episodic",
            content=f"Day {day}: {TOPICS[day % len(TOPICS)]} again, note {day} of the "
            f"{TOPICS[(day * 3) % len(TOPICS)]} diary.",
        )
        for day in range(240)
    ]
    memory_add_many(tenant=tenant, drafts=drafts)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE memory")
    return tenant


def _plan(tenant: Tenant, user_id: str | None) -> str:
    where, params = search_where(
        tenant=tenant, actor=ANA, user_id=user_id, agent_id=None, types=None, tags=None
    )
    params |= {"q": vector_literal([0.05] * 384), "k": 30}
    with connection.cursor() as cursor:
        cursor.execute(sql.SQL("EXPLAIN {}").format(nearest_sql(where)), params)
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.parametrize("user_id", ["ana", None], ids=["named-user", "actor-own-branch"])
def test_an_owners_vectors_are_read_from_an_index_of_the_owners_rows(
    one_users_table: Tenant, user_id: str | None
) -> None:
    # A sequential scan fetches each row's embedding from TOAST. The covering index
    # serves it without the table where the visibility map allows (the LongMemEval pool:
    # bench.search_latency_lme); what holds whatever the map: the owner is among the
    # scan's index keys, so no other user's row is read.
    plan = _plan(one_users_table, user_id)
    assert "Seq Scan on memory" not in plan, plan
    conditions = [line for line in plan.splitlines() if "Index Cond:" in line]
    assert any("user_id" in line and "= 'ana'::text" in line for line in conditions), plan


def _outcome(tenant: Tenant, query: str, user_id: str | None, now: datetime) -> tuple[Any, ...]:
    outcome: SearchOutcome = memory_search(
        tenant=tenant, actor=ANA, query=query, user_id=user_id, limit=10, now=now
    )
    hits = [(hit.memory.pk, hit.score, hit.parts) for hit in outcome.hits]
    return hits, outcome.vector_ranking, outcome.lexical_ranking


@pytest.mark.parametrize("user_id", ["ana", None], ids=["named-user", "actor-own-branch"])
def test_the_search_ranks_as_the_plain_statement_does(
    one_users_table: Tenant, user_id: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Same hits, scores and parts to the last bit, same rankings of both steps; at one
    # instant, as recency moves with the clock.
    now = timezone.now()
    fast = [_outcome(one_users_table, query, user_id, now) for query in QUERIES]
    monkeypatch.setattr(vector, "_owner_rows", lambda where, branch: branch)
    assert "Seq Scan on memory" in _plan(one_users_table, user_id)  # the two paths differ
    plain = [_outcome(one_users_table, query, user_id, now) for query in QUERIES]
    assert fast == plain
    assert all(hits for hits, _, _ in fast)
