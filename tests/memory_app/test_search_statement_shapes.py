"""A search's filters and its pool statement are composed once per shape
(memory_app.selectors.search.filters `where_of_shape`, pool `pool_statement`): a search
whose shape an earlier one composed must get what would be composed for it, in every
shape (the actors, a user named or not, the filters, the lexical step, the vector step,
a speaker named), with its own values in its parameters."""

from __future__ import annotations

import itertools
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from memory_app.selectors.memories import Actor
from memory_app.selectors.search import LexicalQuery, MemoryFilters, search_where
from memory_app.selectors.search import pool as search_pool
from memory_app.selectors.search.filters import WhereShape
from sessions_app.models import Tenant

# Each case twice: the same shape, other values (another actor of the same kind, another
# user, other filter values, other terms of the same count).
ACTORS = [
    (Actor(user_id="alice"), Actor(user_id="bob")),
    (Actor(user_id="alice", roles=("support",)), Actor(user_id="dan", roles=("ops", "qa"))),
    (Actor(roles=("support",)), Actor(roles=("ops",))),
    (Actor(), Actor()),
    (Actor(operator=True), Actor(operator=True)),
]
USERS = ["none", "own", "other"]
FILTERS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({}, {}),
    (
        {"agent_id": "planner", "types": ["fact"], "tags": ["travel"]},
        {"agent_id": "writer", "types": ["episodic", "fact"], "tags": ["home"]},
    ),
    (
        {
            "filters": MemoryFilters(
                session_id=uuid.UUID(int=1), min_importance=0.1, metadata={"a": 1},
                valid_at=datetime(2024, 6, 1, tzinfo=UTC), sources=("chat",),
            )
        },
        {
            "filters": MemoryFilters(
                session_id=uuid.UUID(int=2), min_importance=0.7, metadata={"b": [2]},
                valid_at=datetime(2020, 1, 1, tzinfo=UTC), sources=("mcp", "import"),
            )
        },
    ),
]  # fmt: skip
LEXICAL = [
    (None, None),
    (
        LexicalQuery(["kayak", "lake"], [2.0, 0.5], 6.0, ["kayak"], ["kayak", "lake"]),
        LexicalQuery(["boat", "river"], [1.0, 0.2], 9.0, ["boat"], ["river"]),
    ),
    (  # as many terms, but the actor's own branch has no candidate term
        LexicalQuery(["tea", "cup"], [3.0, 1.0], 4.0, ["tea"], []),
        LexicalQuery(["cup", "mug"], [1.5, 0.1], 5.0, ["mug"], []),
    ),
    (  # only the actor's own branch has one
        LexicalQuery(["tea", "cup"], [3.0, 1.0], 4.0, [], ["cup"]),
        LexicalQuery(["pot", "mug"], [1.5, 0.1], 5.0, [], ["pot", "mug"]),
    ),
]


def _user(kind: str, actor: Actor, other: str) -> str | None:
    return {"none": None, "own": actor.user_id, "other": other}[kind]


def _statement(
    tenant: Any,
    actor: Actor,
    user: str | None,
    filters: dict[str, Any],
    lexical: LexicalQuery | None,
    vector: bool,
    speakers: bool,
    lexemes: bool = False,
) -> tuple[str, str, Any]:
    """The statement `pool_statement` serves for this search, and the one composed for it."""
    where, params = search_where(
        tenant=tenant, actor=actor, user_id=user, agent_id=filters.get("agent_id"),
        types=filters.get("types"), tags=filters.get("tags"), filters=filters.get("filters"),
    )  # fmt: skip
    if lexical is not None and where.own_branch is None:
        lexical = replace(lexical, own_candidate_lexemes=None)
    served = search_pool.pool_statement(
        where, vector=vector, lexical=lexical, candidates=30, speakers=speakers, lexemes=lexemes
    )
    composed = search_pool._compose_statement(where, vector, lexical, 30, speakers, lexemes)
    return served.as_string(None), composed.as_string(None), (where, params)


def test_a_search_gets_the_statement_of_its_own_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_pool, "_STATEMENTS", {})
    monkeypatch.setattr(search_pool, "_STATEMENTS_KEPT", 10_000)  # every shape kept here
    first_tenant, second_tenant = Tenant(pk=1), Tenant(pk=2)
    cases = itertools.product(
        ACTORS, USERS, FILTERS, LEXICAL, [True, False], [True, False], [True, False]
    )  # fmt: skip
    texts = set()
    for case in cases:
        (actor, actor2), user, (filters, filters2), (lexical, lexical2), vector, speakers = case[:6]
        lexemes = case[6]
        if lexical is None and not vector:
            continue  # no step runs: the search returns before the pool
        served, composed, _ = _statement(
            first_tenant, actor, _user(user, actor, "carol"), filters, lexical, vector, speakers,
            lexemes,
        )  # fmt: skip
        assert served == composed
        texts.add(served)
        # The same shape with other values: served from the cache, and what composing
        # it would give.
        served2, composed2, (where2, params2) = _statement(
            second_tenant, actor2, _user(user, actor2, "erin"), filters2, lexical2, vector,
            speakers, lexemes,
        )  # fmt: skip
        assert served2 == composed2 == served
        assert where2.tenant_id == 2 and params2["tenant"] == 2
        assert params2["acting_user"] == (actor2.user_id or None)
        assert where2.owner == params2["owner"]
    # One entry a shape; shapes that differ only where the text does not (an operator's
    # roles) hold equal texts.
    assert 400 < len(texts) <= len(search_pool._STATEMENTS)


def test_the_filters_text_is_composed_once_a_shape() -> None:
    alice, _ = search_where(
        tenant=Tenant(pk=1), actor=Actor(user_id="alice"), user_id=None, agent_id="a",
        types=None, tags=None,
    )  # fmt: skip
    bob, params = search_where(
        tenant=Tenant(pk=3), actor=Actor(user_id="bob"), user_id=None, agent_id="b",
        types=None, tags=None,
    )  # fmt: skip
    assert alice.shape == bob.shape and isinstance(bob.shape, WhereShape)
    assert alice.scope is bob.scope and alice.branches is bob.branches  # the same objects
    assert (alice.owner, bob.owner, bob.tenant_id) == ("alice", "bob", 3)
    assert params["agent_id"] == "b" and params["owner"] == "bob"


def test_filters_written_by_hand_are_composed_every_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(search_pool, "_STATEMENTS", {})
    where, _ = search_where(
        tenant=Tenant(pk=1), actor=Actor(user_id="alice"), user_id=None, agent_id=None,
        types=None, tags=None,
    )  # fmt: skip
    search_pool.pool_statement(replace(where, shape=None), vector=True, lexical=None, candidates=30)
    assert search_pool._STATEMENTS == {}
    search_pool.pool_statement(where, vector=True, lexical=None, candidates=30)
    assert len(search_pool._STATEMENTS) == 1


def test_the_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_pool, "_STATEMENTS", {})
    monkeypatch.setattr(search_pool, "_STATEMENTS_KEPT", 3)
    where, _ = search_where(
        tenant=Tenant(pk=1), actor=Actor(user_id="alice"), user_id=None, agent_id=None,
        types=None, tags=None,
    )  # fmt: skip
    for candidates in range(200, 210):  # ten shapes: ten HNSW lists
        statement = search_pool.pool_statement(
            where, vector=True, lexical=None, candidates=candidates
        )
        assert f"hnsw.ef_search = {candidates};" in statement.as_string(None)
        assert len(search_pool._STATEMENTS) <= 3
