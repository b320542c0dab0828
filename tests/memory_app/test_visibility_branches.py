"""The visibility rule's branches (`visibility_branches_sql`): a tenant-wide search
looks for the nearest public memories, the actor's own, and those shared with the actor,
one branch at a time, then merges them. The branches must be the visibility rule cut in
disjoint pieces (a row in two would come twice, a row in none would never be found, a row
outside the rule would leak), and the merged ranking must be the exact ranking under the
rule. The ORM reading of the rule (`visibility_q`) keeps exactly the rows its SQL reading
keeps. The lexical side of the branches is in test_visibility_lexical_branches."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.db import connection, transaction
from psycopg import sql

from memory_app.embedding import embed_query
from memory_app.models import Memory
from memory_app.selectors.memories import Actor
from memory_app.selectors.search import SearchWhere, memory_search, search_where
from memory_app.selectors.search import engine as search_engine
from memory_app.selectors.search.pool import Pool, read_pool
from memory_app.selectors.search.vector import EF_SEARCH, nearest_sql
from memory_app.selectors.visibility import visibility_branches_sql, visibility_q, visibility_sql
from memory_app.services.memories import MemoryDraft, memory_add_many
from sessions_app.models import Tenant
from tests.memory_app.visibility_helpers import (
    ACTORS,
    MEMORIES,
    add_memories_of_every_visibility,
    of_owner,
    rows_under,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def memories(tenant: Tenant) -> dict[uuid.UUID, str]:
    return add_memories_of_every_visibility(tenant)


def _exact(where: SearchWhere, params: dict[str, object]) -> list[uuid.UUID]:
    """The k nearest under `where` by an exact scan: no index scan (an HNSW one would be
    approximate and, without an iterative scan, may return fewer rows under a filter)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute(
            sql.SQL(
                "SELECT m.id FROM memory m WHERE {} "
                "ORDER BY m.embedding::halfvec(384) <=> %(q)s::halfvec(384), m.id LIMIT %(k)s"
            ).format(where.sql),
            params,
        )
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.parametrize("actor", ACTORS, ids=repr)
def test_the_branches_cut_the_visibility_rule_in_disjoint_pieces(
    tenant: Tenant, memories: dict[uuid.UUID, str], actor: Actor
) -> None:
    rule, params = visibility_sql(actor)
    visible = rows_under(tenant, rule, params)
    pieces = [rows_under(tenant, branch, params) for branch in visibility_branches_sql(actor)]
    assert set().union(*pieces) == visible
    assert sum(len(piece) for piece in pieces) == len(visible)  # no row in two branches


def test_the_rule_still_says_who_sees_what(tenant: Tenant, memories: dict[uuid.UUID, str]) -> None:
    # The branches are checked against the rule above; the rule itself against a reading
    # of MEMORIES, so that a wrong rule cannot hide behind branches that copy it.
    def expected(actor: Actor) -> set[str]:
        seen = set()
        for owner, scope, users, roles, content in MEMORIES:
            if (
                actor.operator
                or scope == "public"
                or owner == actor.user_id
                or (scope == "shared" and (actor.user_id in users or set(roles) & set(actor.roles)))
            ):
                seen.add(content)
        return seen

    for actor in ACTORS:
        rule, params = visibility_sql(actor)
        assert {memories[pk] for pk in rows_under(tenant, rule, params)} == expected(actor), actor


@pytest.mark.parametrize("actor", ACTORS, ids=repr)
def test_the_orm_filter_and_the_sql_keep_the_same_rows(
    tenant: Tenant, memories: dict[uuid.UUID, str], actor: Actor
) -> None:
    # Both are derived from one definition (`visibility_branches`); the ORM's NOT and
    # array lookups must still read as the SQL's <>, IS DISTINCT FROM, @> and &&.
    rule, params = visibility_sql(actor)
    orm = Memory.objects.filter(tenant=tenant).filter(visibility_q(actor))
    assert set(orm.values_list("pk", flat=True)) == rows_under(tenant, rule, params)


@pytest.mark.parametrize("actor", ACTORS, ids=repr)
def test_a_tenant_wide_vector_search_ranks_exactly_what_the_actor_may_see(
    tenant: Tenant, memories: dict[uuid.UUID, str], actor: Actor
) -> None:
    query = "Who is travelling, and when does the flight leave?"
    vector = embed_query(query)
    where, params = search_where(
        tenant=tenant, actor=actor, user_id=None, agent_id=None, types=None, tags=None
    )
    assert len(where.branches) == len(visibility_branches_sql(actor))
    exact = _exact(where, {**params, "q": str(vector), "k": 5})
    outcome = memory_search(
        tenant=tenant, actor=actor, query=query, limit=5, mode="vector", query_embedding=vector
    )
    # limit 5 → 30 candidates: every visible memory is in the vector ranking, in order.
    rule, rule_params = visibility_sql(actor)
    assert len(outcome.vector_ranking) == len(rows_under(tenant, rule, rule_params))
    assert outcome.vector_ranking[:5] == exact


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_the_branches_merge_by_distance_before_the_limit(
    tenant: Tenant, memories: dict[uuid.UUID, str], k: int
) -> None:
    # Fewer candidates than visible rows: each branch's own top k, then the best k of all.
    actor = Actor(user_id="alice", roles=("support",))
    vector = embed_query("Who is travelling, and when does the flight leave?")
    where, params = search_where(
        tenant=tenant, actor=actor, user_id=None, agent_id=None, types=None, tags=None
    )
    params |= {"q": str(vector), "k": k}
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")  # as the search
        cursor.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(EF_SEARCH)))
        cursor.execute(nearest_sql(where), params)
        merged = [row[0] for row in cursor.fetchall()]
    exact = _exact(where, params)
    assert len(where.branches) == 3
    assert merged == exact


@pytest.mark.parametrize("owner", ["alice", "bob", "carol"])
def test_a_search_of_the_actors_own_memories_drops_no_row_and_adds_none(
    tenant: Tenant, memories: dict[uuid.UUID, str], owner: str
) -> None:
    # search_where does not filter an actor's own memories by visibility (all of them are
    # visible to their owner): the same rows as the rule would keep.
    actor = Actor(user_id=owner, roles=("sales",))
    where, params = search_where(
        tenant=tenant, actor=actor, user_id=owner, agent_id=None, types=None, tags=None
    )
    assert where.visible == sql.SQL("TRUE")
    rule, rule_params = visibility_sql(actor)
    expected = rows_under(tenant, of_owner(rule), {**rule_params, "owner": owner})
    assert rows_under(tenant, where.sql, params) == expected
    assert len(expected) == sum(1 for row in MEMORIES if row[0] == owner)


@pytest.mark.parametrize("user_id", [None, "zed"])
def test_the_pool_reports_the_full_precision_cosine_of_every_candidate(
    tenant: Tenant, settings: object, monkeypatch: pytest.MonkeyPatch, user_id: str | None
) -> None:
    # Candidates of the vector side bring their cosine from the vector step (from the
    # covering index for one user's rows), a candidate of the lexical side alone computes
    # it from its row: both must be the cosine of the stored embedding at full precision,
    # not the halfvec distance the vector step orders by. Near-identical notes, ten more
    # than a side's POOL_PER_SIDE candidates, fill the vector side; the one rare word
    # brings a far memory in lexically. The vector is the notes' words alone, so the far
    # memory is far (cosine about 0, not just past the side's last by a hair, which another
    # CPU's float rounding would move). The pool itself is read, not the hits: whether
    # fusion puts the far memory in the top 10 is not this test's question.
    settings.ENGRAM_MEMORY_MERGE_THRESHOLD = 1.01  # type: ignore[attr-defined] # keep all
    drafts = [
        MemoryDraft(user_id="zed", type="fact", content=f"Zed's note {i}: mild weather in town.")
        for i in range(search_engine.POOL_PER_SIDE + 10)
    ]
    drafts.append(
        MemoryDraft(user_id="zed", type="fact", content="Zed's xylophone lesson moved to Thursday.")
    )
    memory_add_many(tenant=tenant, drafts=drafts)
    pools: list[Pool] = []

    def read_and_keep(*args: Any, **kwargs: Any) -> Pool:
        pools.append(read_pool(*args, **kwargs))
        return pools[-1]

    monkeypatch.setattr(search_engine, "read_pool", read_and_keep)
    query = "mild weather in town, and the xylophone"
    vector = embed_query("mild weather in town")
    memory_search(
        tenant=tenant, actor=Actor(user_id="zed"), query=query, user_id=user_id, limit=10,
        query_embedding=vector,
    )  # fmt: skip
    (pool,) = pools
    lexical_only = set(pool.lexical_ranking) - set(pool.vector_ranking)
    assert len(pool.vector_ranking) == search_engine.POOL_PER_SIDE
    assert lexical_only and lexical_only <= set(pool.candidates)
    with connection.cursor() as cursor:
        for pk, candidate in pool.candidates.items():
            cursor.execute(
                "SELECT 1 - (embedding <=> %s::vector) FROM memory WHERE id = %s",
                [str(vector), pk],
            )
            assert candidate.semantic == pytest.approx(cursor.fetchone()[0], abs=1e-6)


@pytest.mark.parametrize("user_id", [None, "alice"])
def test_the_vector_step_computes_the_full_cosine_for_the_k_rows_it_returns_only(
    tenant: Tenant, memories: dict[uuid.UUID, str], user_id: str | None
) -> None:
    # In a branch's own SELECT list PostgreSQL computes the cosine in the scan, below the
    # sort: for every row of the user (500 at B2's million, any number for a big user),
    # not the k kept. The plan must compute it above every Limit.
    actor = Actor(user_id="alice")
    where, params = search_where(
        tenant=tenant, actor=actor, user_id=user_id, agent_id=None, types=None, tags=None
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # the index scans of a big table
        cursor.execute(
            sql.SQL("EXPLAIN (VERBOSE, FORMAT JSON) {}").format(nearest_sql(where)),
            {**params, "q": str(embed_query("the budget")), "k": 2},
        )
        plan = cursor.fetchone()[0][0]["Plan"]

    def computing(node: dict[str, object], below_limit: bool = False) -> list[bool]:
        """For each node whose output computes the full cosine: is it under a Limit?"""
        cosine = any("::vector)" in str(column) for column in node.get("Output", []))
        found = [below_limit] if cosine else []
        under = below_limit or node["Node Type"] == "Limit"
        for child in node.get("Plans", []):
            found += computing(child, under)
        return found

    assert computing(plan) == [False]
