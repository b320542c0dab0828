"""A search of one user's memories without the caller's filters runs its pool's generic
plan (`pool.plan_mode`): the same hits and rankings as the plan made for each run's
values, and, made at a user of few memories, still every candidate asked for at a user of
many (the vector branch is the owner's rows in exact order whatever the plan)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction
from psycopg import sql

from memory_app.embedding import embed_query
from memory_app.selectors.memories import Actor
from memory_app.selectors.search import MemoryFilters, memory_search, search_where
from memory_app.selectors.search import engine as search_engine
from memory_app.selectors.search import pool as search_pool
from memory_app.selectors.search.pool import Pool, plan_mode, read_pool
from memory_app.selectors.search.vector import nearest_sql
from memory_app.services.memories import MemoryDraft, memory_add_many
from sessions_app.models import Tenant

pytestmark = pytest.mark.django_db

TOPICS = ("weather", "cooking", "running", "books", "travel", "music", "garden", "work")
QUERIES = (
    "what did I cook last weekend",
    "books I read on the train",
    "how was the run in the park",
    "music at the concert",
    "garden tomatoes",
)


def _add(tenant: Tenant, user: str, count: int) -> None:
    drafts = [
        MemoryDraft(user_id=user, type="fact",
                    content=f"{user} note {i} about {TOPICS[i % len(TOPICS)]}, day {i}.")
        for i in range(count)
    ]  # fmt: skip
    memory_add_many(tenant=tenant, drafts=drafts)


def _search(tenant: Tenant, user: str, query: str) -> tuple[Any, ...]:
    outcome = memory_search(tenant=tenant, actor=Actor(user_id=user), query=query,
                            user_id=user, limit=10, query_embedding=embed_query(query))  # fmt: skip
    return (
        [hit.memory.pk for hit in outcome.hits],
        outcome.vector_ranking,
        outcome.lexical_ranking,
    )


def test_the_plan_is_generic_for_one_owner_s_unfiltered_search_only(tenant: Tenant) -> None:
    def where(**kwargs: Any) -> Any:
        fields = {"user_id": None, "agent_id": None, "types": None, "tags": None} | kwargs
        return search_where(tenant=tenant, actor=Actor(user_id="ann"), **fields)[0]

    assert plan_mode(where(user_id="ann")) == "force_generic_plan"
    assert plan_mode(where(user_id="bob")) == "force_generic_plan"  # one branch, bob's
    assert plan_mode(where()) == "force_custom_plan"  # tenant-wide: several branches
    assert plan_mode(where(user_id="ann", types=["fact"])) == "force_custom_plan"
    filtered = where(user_id="ann", filters=MemoryFilters(pinned=True))
    assert plan_mode(filtered) == "force_custom_plan"


def test_the_generic_plan_finds_what_the_plan_for_the_values_finds(
    tenant: Tenant, settings: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.ENGRAM_MEMORY_MERGE_THRESHOLD = 1.01  # type: ignore[attr-defined] # keep all
    _add(tenant, "ann", 80)
    _add(tenant, "bob", 20)
    generic = {(user, q): _search(tenant, user, q) for user in ("ann", "bob") for q in QUERIES}
    monkeypatch.setattr(search_pool, "_STATEMENTS", {})
    monkeypatch.setattr(search_pool, "plan_mode", lambda where: "force_custom_plan")
    custom = {(user, q): _search(tenant, user, q) for user in ("ann", "bob") for q in QUERIES}
    assert generic == custom
    assert all(len(found[1]) == 20 for (user, _), found in generic.items() if user == "bob")


def test_a_plan_made_at_a_small_user_reads_every_candidate_of_a_large_one(
    tenant: Tenant, settings: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.ENGRAM_MEMORY_MERGE_THRESHOLD = 1.01  # type: ignore[attr-defined] # keep all
    _add(tenant, "tiny", 3)
    _add(tenant, "large", 2 * search_engine.POOL_PER_SIDE)
    pools: list[Pool] = []

    def keep(*args: Any, **kwargs: Any) -> Pool:
        pools.append(read_pool(*args, **kwargs))
        return pools[-1]

    monkeypatch.setattr(search_engine, "read_pool", keep)
    for _ in range(6):  # past the plan cache's first runs: the connection holds its plan
        _search(tenant, "tiny", QUERIES[0])
    _search(tenant, "large", QUERIES[0])
    assert len(pools[0].vector_ranking) == 3
    assert len(set(pools[-1].vector_ranking)) == search_engine.POOL_PER_SIDE


def test_the_owner_s_branch_is_never_read_through_the_hnsw_graph(tenant: Tenant) -> None:
    # Even with sorting made as costly as the planner can make it, the owner's rows are
    # sorted, not walked in the graph's order: no index provides the branch's order.
    _add(tenant, "ann", 40)
    where, params = search_where(tenant=tenant, actor=Actor(user_id="ann"), user_id="ann",
                                 agent_id=None, types=None, tags=None)  # fmt: skip
    params |= {"q": str(embed_query("garden tomatoes")), "k": 30}
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute(sql.SQL("EXPLAIN ").format() + nearest_sql(where), params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "hnsw" not in plan and "memory_embedding_public" not in plan, plan
    assert "Sort" in plan, plan
