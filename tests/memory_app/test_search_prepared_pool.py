"""The pool's SELECT runs as a prepared statement of the connection
(memory_app.selectors.search.pool, config.prepared_statements): it must find what the
same SELECT planned each time finds, in every visibility shape and search mode; a
connection prepares it once per shape; a query of more terms than the bound is not
prepared."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection

from memory_app.selectors.memories import Actor
from memory_app.selectors.search import memory_search
from memory_app.selectors.search import pool as search_pool
from sessions_app.models import Tenant
from tests.memory_app.test_visibility_branches import ACTORS, MEMORIES, memories  # noqa: F401

pytestmark = pytest.mark.django_db

NOW = datetime(2030, 1, 1, tzinfo=UTC)
QUERIES = [
    "Who lent a bike, and who is allergic to peanuts?",
    "When does Bob's flight to Oslo leave?",
    "passport drawer",
]


def _outcome(tenant: Tenant, actor: Actor, query: str, **kwargs: Any) -> list[Any]:
    outcome = memory_search(
        tenant=tenant, actor=actor, query=query, limit=10, now=NOW, **kwargs
    )  # the same moment for both readings: recency is a part of the score
    return [
        [(hit.memory.pk, round(hit.score, 9), hit.parts) for hit in outcome.hits],
        outcome.vector_ranking,
        outcome.lexical_ranking,
    ]


def _prepared_pools() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name FROM pg_prepared_statements WHERE name LIKE 'engram_search_pool%%'"
        )
        return sorted(row[0] for row in cursor.fetchall())


def _drop_prepared() -> None:
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")


@pytest.mark.parametrize("mode", ["hybrid", "vector", "lexical"])
@pytest.mark.parametrize("user_id", [None, "alice"])
def test_the_prepared_pool_finds_what_the_planned_one_finds(
    tenant: Tenant,
    memories: dict[uuid.UUID, str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    user_id: str | None,
) -> None:
    cases = [(actor, query) for actor in ACTORS for query in QUERIES]
    prepared = [_outcome(tenant, a, q, mode=mode, user_id=user_id) for a, q in cases]
    assert _prepared_pools(), "the search prepared no statement"
    monkeypatch.setattr(search_pool, "PREPARED_MAX_TERMS", -1)  # every pool planned
    planned = [_outcome(tenant, a, q, mode=mode, user_id=user_id) for a, q in cases]
    assert prepared == planned
    assert any(hits for hits, _, _ in prepared)


def test_a_connection_prepares_a_shape_once(
    tenant: Tenant,
    memories: dict[uuid.UUID, str],  # noqa: F811
) -> None:
    _drop_prepared()
    actor = Actor(user_id="alice")
    # Three queries of three terms each ("bike", "lent", "summer" …): one shape.
    for query in ("lent road bike", "fed sourdough starter", "closes office early"):
        memory_search(tenant=tenant, actor=actor, query=query, user_id="alice")
        assert len(_prepared_pools()) == 1
    _drop_prepared()  # as a pooler's DISCARD ALL would
    again = memory_search(tenant=tenant, actor=actor, query="lent road bike", user_id="alice")
    assert again.hits and len(_prepared_pools()) == 1


def test_each_pool_is_planned_as_its_message_says_whatever_the_connection_prefers(
    tenant: Tenant,
    memories: dict[uuid.UUID, str],  # noqa: F811
) -> None:
    # A search of one owner's memories runs a generic plan (its vector branch is that
    # owner's rows in exact order whatever the plan); a tenant-wide one is planned for
    # each run's values, since a generic plan may walk a branch of shared or public rows
    # in the HNSW graph. Each message says so even where the connection prefers the
    # other (`pool.plan_mode`).
    def plans(actor: Actor, user_id: str | None, preferred: str) -> tuple[int, int]:
        _drop_prepared()
        with connection.cursor() as cursor:
            cursor.execute(f"SET plan_cache_mode = {preferred}")
        try:
            for _ in range(6):
                memory_search(tenant=tenant, actor=actor, query="road bike", user_id=user_id)
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT sum(generic_plans), sum(custom_plans) FROM pg_prepared_statements"
                    " WHERE name LIKE 'engram_search_pool%%'"
                )
                generic, custom = cursor.fetchone()
        finally:
            with connection.cursor() as cursor:
                cursor.execute("RESET plan_cache_mode")
        return int(generic), int(custom)

    assert plans(Actor(user_id="alice"), "alice", "force_custom_plan") == (6, 0)
    assert plans(Actor(user_id="bob"), None, "force_generic_plan") == (0, 6)


def test_a_query_of_more_terms_than_the_bound_is_not_prepared(
    tenant: Tenant,
    memories: dict[uuid.UUID, str],  # noqa: F811
) -> None:
    _drop_prepared()
    # Twenty words of Alice's own memories: twenty of her terms.
    words = [
        "passport", "blue", "drawer", "sourdough", "starter", "fed", "sunday", "morning",
        "lent", "road", "bike", "summer", "laptop", "warranty", "march", "office", "closes",
        "early", "friday", "month",
    ]  # fmt: skip
    assert len(words) > search_pool.PREPARED_MAX_TERMS
    outcome = memory_search(
        tenant=tenant, actor=Actor(user_id="alice"), query=" ".join(words), user_id="alice"
    )
    assert outcome.hits
    assert _prepared_pools() == []
