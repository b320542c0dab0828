"""The visibility rule's branches (`visibility_branches_sql`): a tenant-wide search
looks for the nearest public memories, the actor's own, and those shared with the actor,
one branch at a time, then merges them. The branches must be the visibility rule cut in
disjoint pieces (a row in two would come twice, a row in none would never be found, a row
outside the rule would leak), and the merged ranking must be the exact ranking under the
rule. The ORM reading of the rule (`visibility_q`) keeps exactly the rows its SQL reading
keeps."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.db import connection, transaction
from django.test import override_settings
from psycopg import sql

from memory_app.embedding import embed_query
from memory_app.models import Memory
from memory_app.selectors.memories import Actor
from memory_app.selectors.search import LexicalQuery, SearchWhere, memory_search, search_where
from memory_app.selectors.search import engine as search_engine
from memory_app.selectors.search.lexical_hits import lexical_hits_params, lexical_hits_sql
from memory_app.selectors.search.pool import Pool, read_pool
from memory_app.selectors.search.vector import EF_SEARCH, nearest_sql
from memory_app.selectors.visibility import visibility_branches_sql, visibility_q, visibility_sql
from memory_app.services.memories import MemoryDraft, memory_add_many
from sessions_app.models import Tenant

pytestmark = pytest.mark.django_db

# (owner, scope, allowed users, allowed roles, content): every way a memory can be visible
# or not to the actors below; the contents are distinct enough not to be merged.
MEMORIES = [
    ("alice", "private", (), (), "Alice keeps her passport in the blue drawer."),
    ("alice", "shared", (), (), "Alice's sourdough starter is fed every Sunday morning."),
    ("alice", "shared", ("carol",), (), "Alice lent Carol her road bike for the summer."),
    ("alice", "shared", (), ("support",), "Alice's laptop warranty runs until next March."),
    ("alice", "public", (), (), "The office closes early on the last Friday of the month."),
    ("bob", "private", (), (), "Bob is allergic to peanuts and shellfish."),
    ("bob", "shared", ("alice",), (), "Bob wants Alice to review the quarterly budget."),
    ("bob", "shared", ("alice", "carol"), ("support",), "Bob's flight to Oslo leaves at 7am."),
    ("bob", "shared", (), ("sales",), "Bob closed the Lisbon deal for forty licences."),
    ("bob", "public", (), (), "Parking passes are renewed in the first week of January."),
    ("carol", "private", (), (), "Carol practises the cello before breakfast."),
    ("carol", "shared", ("bob",), ("support", "sales"), "Carol's printer jams on duplex."),
]
ACTORS = [
    Actor(),
    Actor(user_id="alice"),
    Actor(user_id="carol"),
    Actor(user_id="dave"),
    Actor(roles=("support",)),
    Actor(user_id="alice", roles=("support",)),
    Actor(user_id="bob", roles=("sales", "finance")),
    Actor(operator=True),
]


@pytest.fixture
def memories(tenant: Tenant) -> dict[uuid.UUID, str]:
    drafts = [
        MemoryDraft(
            user_id=owner,
            type="fact",
            content=content,
            scope=scope,
            allowed_users=users,
            allowed_roles=roles,
        )
        for owner, scope, users, roles, content in MEMORIES
    ]
    results = memory_add_many(tenant=tenant, drafts=drafts)
    assert [result.action for result in results] == ["created"] * len(MEMORIES)
    return {result.memory.pk: result.memory.content for result in results}


def _ids(tenant: Tenant, predicate: sql.Composable, params: dict[str, object]) -> set[uuid.UUID]:
    with connection.cursor() as cursor:
        cursor.execute(
            sql.SQL("SELECT m.id FROM memory m WHERE m.tenant_id = %(tenant)s AND {}").format(
                predicate
            ),
            {**params, "tenant": tenant.pk},
        )
        return {row[0] for row in cursor.fetchall()}


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
    visible = _ids(tenant, rule, params)
    pieces = [_ids(tenant, branch, params) for branch in visibility_branches_sql(actor)]
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
        assert {memories[pk] for pk in _ids(tenant, rule, params)} == expected(actor), actor


@pytest.mark.parametrize("actor", ACTORS, ids=repr)
def test_the_orm_filter_and_the_sql_keep_the_same_rows(
    tenant: Tenant, memories: dict[uuid.UUID, str], actor: Actor
) -> None:
    # Both are derived from one definition (`visibility_branches`); the ORM's NOT and
    # array lookups must still read as the SQL's <>, IS DISTINCT FROM, @> and &&.
    rule, params = visibility_sql(actor)
    orm = Memory.objects.filter(tenant=tenant).filter(visibility_q(actor))
    assert set(orm.values_list("pk", flat=True)) == _ids(tenant, rule, params)


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
    assert len(outcome.vector_ranking) == len(_ids(tenant, rule, rule_params))
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
    expected = _ids(tenant, _of_owner(rule), {**rule_params, "owner": owner})
    assert _ids(tenant, where.sql, params) == expected
    assert len(expected) == sum(1 for row in MEMORIES if row[0] == owner)


def _of_owner(predicate: sql.Composable) -> sql.Composable:
    """`predicate` on the rows of the user `%(owner)s`."""
    return sql.SQL("m.user_id = %(owner)s AND {}").format(predicate)


def _holding(
    tenant: Tenant, word: str, predicate: sql.Composable, params: dict[str, object]
) -> set[str]:
    """Contents of the rows under `predicate` whose lexical vector holds `word`."""
    found = _ids(
        tenant,
        sql.SQL("{} AND m.lexical_vector @@ plainto_tsquery('english', %(word)s)").format(
            predicate
        ),
        {**params, "word": word},
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT content FROM memory WHERE id = ANY(%s)", [list(found)])
        return {row[0] for row in cursor.fetchall()}


# Words of several owners and scopes (private and shared ones of their own, shared ones
# of others), and one of public memories: "office" (Alice's public one).
WORDS = ["alice", "bob", "carol", "office"]


@pytest.mark.parametrize("actor", ACTORS, ids=repr)
@pytest.mark.parametrize("word", WORDS)
def test_a_tenant_wide_lexical_search_reads_every_visible_row_with_the_term_and_no_other(
    tenant: Tenant, memories: dict[uuid.UUID, str], actor: Actor, word: str
) -> None:
    # lexical_hits_sql reads each branch through its own index; the rows it returns must
    # be those the rule lets the actor see that hold the term, each once.
    outcome = memory_search(tenant=tenant, actor=actor, query=word, limit=20, mode="lexical")
    rule, params = visibility_sql(actor)
    expected = _holding(tenant, word, rule, params)
    found = [memories[pk] for pk in outcome.lexical_ranking]
    assert len(found) == len(set(found))
    assert set(found) == expected
    assert {hit.memory.content for hit in outcome.hits} == expected


@pytest.mark.parametrize("actor", ACTORS, ids=repr)
@pytest.mark.parametrize("owner", ["alice", "bob", "carol"])
@pytest.mark.parametrize("word", WORDS)
def test_a_lexical_search_of_one_users_memories_reads_every_visible_row_of_theirs_with_the_term(
    tenant: Tenant, memories: dict[uuid.UUID, str], actor: Actor, owner: str, word: str
) -> None:
    # With `user_id`, the lexical step looks the terms up in the owner's own index
    # (`memory_lexical_owner`, keyed by tenant, user and lexeme): it must find the same
    # rows as the rule and the owner filter over every row of the tenant.
    outcome = memory_search(
        tenant=tenant, actor=actor, query=word, user_id=owner, limit=20, mode="lexical"
    )
    rule, params = visibility_sql(actor)
    expected = _holding(tenant, word, _of_owner(rule), {**params, "owner": owner})
    found = [memories[pk] for pk in outcome.lexical_ranking]
    assert len(found) == len(set(found))
    assert set(found) == expected


def test_each_lexical_branch_keeps_its_own_bound(
    tenant: Tenant, memories: dict[uuid.UUID, str]
) -> None:
    # With a bound of one row a branch, a tenant-wide search whose terms are in all three
    # branches (Alice's own memories, a public one, Bob's shared with Alice) reads one
    # row of each: the bound is per branch, and no branch crowds out another.
    actor = Actor(user_id="alice")
    where, params = search_where(
        tenant=tenant, actor=actor, user_id=None, agent_id=None, types=None, tags=None
    )
    terms = ["alic", "offic", "bob"]
    lexical = LexicalQuery(terms, [1.0] * 3, 1.0, terms, own_candidate_lexemes=terms)
    with connection.cursor() as cursor:
        cursor.execute(
            lexical_hits_sql(where, lexical),
            {**params, **lexical_hits_params(where, lexical), "cap": 1},
        )
        rows = [row[0] for row in cursor.fetchall()]
    assert len(rows) == len(where.branches) == 3
    rule, rule_params = visibility_sql(actor)
    holding = set().union(*(_holding(tenant, w, rule, rule_params) for w in WORDS))
    assert {memories[pk] for pk in rows} <= holding
    pieces = [_ids(tenant, branch, rule_params) for branch in where.branches]
    assert all(len(piece & set(rows)) == 1 for piece in pieces)


# Seven users' private notes about kayaks, and two of the actor's own.
KAYAKS = [
    (owner, f"{owner.title()} paddles a kayak on the lake every {day}.")
    for owner, day in [
        ("erin", "Monday"),
        ("finn", "Tuesday"),
        ("gus", "Wednesday"),
        ("hana", "Thursday"),
        ("ivan", "Friday"),
        ("jade", "Saturday"),
        ("kai", "Sunday"),
    ]
] + [
    ("alice", "Alice stores her kayak in the garage."),
    ("alice", "Alice wants a lighter kayak paddle."),
]


def test_a_tenant_wide_search_finds_the_actors_own_rows_by_their_own_term_frequencies(
    tenant: Tenant,
) -> None:
    # "kayak" is in nine of the tenant's memories, past a bound of three postings, so no
    # tenant-wide branch may read by it on the tenant's count; but the actor's own branch
    # reads only the actor's memories, and holds two: within the bound, so they are found
    # lexically, as a search of the actor's memories alone finds them. Other users'
    # private notes stay out (they are not visible); with a bound of one, the actor's two
    # are past it too.
    results = memory_add_many(
        tenant=tenant,
        drafts=[MemoryDraft(user_id=owner, type="fact", content=text) for owner, text in KAYAKS],
    )
    own = {result.memory.pk for result in results if result.memory.user_id == "alice"}
    alice = Actor(user_id="alice")
    with override_settings(ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS=3):
        tenant_wide = memory_search(tenant=tenant, actor=alice, query="kayak", mode="lexical")
        alone = memory_search(
            tenant=tenant, actor=alice, query="kayak", user_id="alice", mode="lexical"
        )
        hybrid = memory_search(tenant=tenant, actor=alice, query="my kayak", limit=20)
    assert set(tenant_wide.lexical_ranking) == own == set(alone.lexical_ranking)
    assert {hit.memory.pk for hit in tenant_wide.hits} == own
    assert own <= set(hybrid.lexical_ranking)
    assert {hit.memory.user_id for hit in hybrid.hits} == {"alice"}
    with override_settings(ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS=1):
        bounded = memory_search(tenant=tenant, actor=alice, query="kayak", mode="lexical")
    assert bounded.lexical_ranking == []
    # Without an end user there is no own branch: the tenant's count decides, past the bound.
    with override_settings(ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS=3):
        anonymous = memory_search(tenant=tenant, actor=Actor(), query="kayak", mode="lexical")
    assert anonymous.lexical_ranking == []


@pytest.mark.parametrize("user_id", [None, "zed"])
def test_the_pool_reports_the_full_precision_cosine_of_every_candidate(
    tenant: Tenant, settings: object, monkeypatch: pytest.MonkeyPatch, user_id: str | None
) -> None:
    # Candidates of the vector side bring their cosine from the vector step (from the
    # covering index for one user's rows), a candidate of the lexical side alone computes
    # it from its row: both must be the cosine of the stored embedding at full precision,
    # not the halfvec distance the vector step orders by. 40 near-identical notes fill the
    # vector side's 30 candidates; the one rare word brings a far memory in lexically. The
    # vector is the notes' words alone, so the far memory is far (cosine about 0, not
    # the 31st of 41 by a hair, which another CPU's float rounding would move). The pool
    # itself is read, not the hits: whether fusion puts the far memory in the top 10 is
    # not this test's question.
    settings.ENGRAM_MEMORY_MERGE_THRESHOLD = 1.01  # type: ignore[attr-defined] # keep all
    drafts = [
        MemoryDraft(user_id="zed", type="fact", content=f"Zed's note {i}: mild weather in town.")
        for i in range(40)
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
    assert len(pool.vector_ranking) == 30
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
