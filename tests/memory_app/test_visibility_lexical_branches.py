"""The lexical side of the visibility branches: a lexical search, tenant-wide or of one
user's memories, reads through each branch's own index every row the visibility rule
lets the actor see that holds the term, each once and no other; each branch keeps its
own bound of postings, and the actor's own branch counts the actor's term frequencies."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test import override_settings
from psycopg import sql

from memory_app.selectors.memories import Actor
from memory_app.selectors.search import LexicalQuery, memory_search, search_where
from memory_app.selectors.search.lexical_hits import lexical_hits_params, lexical_hits_sql
from memory_app.selectors.visibility import visibility_sql
from memory_app.services.memories import MemoryDraft, memory_add_many
from sessions_app.models import Tenant
from tests.memory_app.visibility_helpers import (
    ACTORS,
    add_memories_of_every_visibility,
    of_owner,
    rows_under,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def memories(tenant: Tenant) -> dict[uuid.UUID, str]:
    return add_memories_of_every_visibility(tenant)


def _holding(
    tenant: Tenant, word: str, predicate: sql.Composable, params: dict[str, object]
) -> set[str]:
    """Contents of the rows under `predicate` whose lexical vector holds `word`."""
    found = rows_under(
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
    expected = _holding(tenant, word, of_owner(rule), {**params, "owner": owner})
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
    pieces = [rows_under(tenant, branch, rule_params) for branch in where.branches]
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
