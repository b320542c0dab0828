"""The search's SQL. BM25 as the search computes it (`bm25_sql`, term frequencies read
through ts_rank) against the definition, computed here in Python from the tsvector's own
positions (`unnest`): the same number for every document and term, from tf 1 to the 256
positions a tsvector keeps, in both fields, and for lexemes that need quoting. And the
HNSW settings, sent with the statement they are for. And the keys of the lexical indexes
of one user's memories and of a tenant's public ones, written alike by their SQL
function and by the search."""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.db import connection, transaction
from psycopg import sql

from memory_app.models import Memory, MemoryScope
from memory_app.selectors.memories import Actor
from memory_app.selectors.search import LexicalQuery, lexical_query, memory_search, search_where
from memory_app.selectors.search.bm25 import BM25_B, BM25_K1, bm25_params, bm25_sql
from memory_app.selectors.search.lexical_hits import (
    OWNER_LEXEMES_SQL,
    PUBLIC_LEXEMES_SQL,
    lexical_hits_params,
    lexical_hits_sql,
    owner_lexeme_keys,
    public_lexeme_keys,
)
from memory_app.services.memories import MemoryDraft, memory_add_many
from sessions_app.models import Tenant

pytestmark = pytest.mark.django_db


# A tsvector of one text (`%(v0)s`), and of an own text and a window (`%(v1)s`).
ONE_TEXT = sql.SQL("to_tsvector('english', %(v0)s)")
TWO_FIELDS = sql.SQL(
    "setweight(to_tsvector('english', %(v0)s), 'A')"
    " || setweight(to_tsvector('english', %(v1)s), 'B')"
)


def _params(values: list[object]) -> dict[str, object]:
    return {f"v{index}": value for index, value in enumerate(values)}


def _positions(vector_sql: sql.Composable, params: list[object]) -> dict[str, int]:
    """Each lexeme of a tsvector and its number of positions, as PostgreSQL stores them."""
    with connection.cursor() as cursor:
        cursor.execute(
            sql.SQL("SELECT lexeme, cardinality(positions) FROM unnest({})").format(vector_sql),
            _params(params),
        )
        return {lexeme: int(count) for lexeme, count in cursor.fetchall()}


def _reference(tf: dict[str, int], query: LexicalQuery) -> float:
    """BM25 by its definition: sum over the query's terms of
    idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl)), |d| = distinct lexemes."""
    norm = BM25_K1 * (1 - BM25_B + BM25_B * len(tf) / query.average_length)
    return sum(
        idf * tf[lexeme] * (BM25_K1 + 1) / (tf[lexeme] + norm)
        for lexeme, idf in zip(query.lexemes, query.idfs, strict=True)
        if lexeme in tf
    )


def _sql_score(vector_sql: sql.Composable, params: list[object], query: LexicalQuery) -> float:
    with connection.cursor() as cursor:
        cursor.execute(
            sql.SQL("SELECT {} FROM (SELECT {} AS lexical_vector) AS d").format(
                bm25_sql("d", query), vector_sql
            ),
            bm25_params(query) | _params(params),
        )
        return float(cursor.fetchone()[0])


@pytest.mark.parametrize("repeat", [1, 2, 3, 7, 20, 64, 150, 256, 300])
def test_term_frequency_is_read_exactly_up_to_the_positions_a_tsvector_keeps(
    repeat: int,
) -> None:
    # "kyoto" repeat times in the own field (A) and once more in the window (B); "rain"
    # once; "trip" not at all. Past 256 positions PostgreSQL keeps 256.
    own = " ".join(["kyoto"] * repeat) + " rain"
    vector_sql = TWO_FIELDS
    params: list[object] = [own, "we flew to kyoto last spring"]
    tf = _positions(vector_sql, params)
    assert tf["kyoto"] == min(repeat + 1, 256)
    query = LexicalQuery(
        lexemes=["kyoto", "rain", "trip"],
        idfs=[2.5, 1.25, 4.0],
        average_length=5.0,
        candidate_lexemes=["kyoto"],
    )
    assert _sql_score(vector_sql, params, query) == pytest.approx(_reference(tf, query), rel=1e-12)


def test_a_document_without_the_query_terms_scores_zero() -> None:
    query = LexicalQuery(["kyoto"], [3.0], 4.0, ["kyoto"])
    assert _sql_score(ONE_TEXT, ["rain all week"], query) == 0.0
    nothing = LexicalQuery([], [], 1.0, [])
    assert _sql_score(ONE_TEXT, ["rain all week"], nothing) == 0.0


def test_lexemes_that_need_quoting_are_scored_as_literals() -> None:
    # The English parser keeps such tokens whole; quoted, "'" and "\\" are no operators.
    text = "o'brien said c:\\temp and a-73812 twice: a-73812"
    tf = _positions(ONE_TEXT, [text])
    odd = sorted(lexeme for lexeme in tf if not lexeme.isalnum())
    assert odd, tf
    query = LexicalQuery(odd, [1.5 + index for index in range(len(odd))], 6.0, odd)
    assert _sql_score(ONE_TEXT, [text], query) == pytest.approx(_reference(tf, query), rel=1e-12)


def test_search_reports_the_bm25_of_its_definition(tenant: Tenant) -> None:
    """Through memory_search: the lexical part of every hit equals BM25 recomputed from
    the stored tsvectors and the statistics the search used."""
    lines = [
        "Ana: The pottery class pottery teacher said pottery is patience.",
        "Ben: I signed up for pottery on Tuesdays.",
        "Ana: How was the pottery class, and the new puppy?",
        "Ben: The puppy chewed my pottery bowl.",
        "Ana: Rain all week here.",
    ]
    drafts = [
        MemoryDraft(
            user_id="ben", type="episodic", content=line, thread_key="chat", thread_order=order
        )
        for order, line in enumerate(lines)
    ]
    memory_add_many(tenant=tenant, drafts=drafts)
    text = "pottery class puppy"
    with connection.cursor() as cursor:
        query = lexical_query(cursor, tenant=tenant, user_id="ben", text=text)
    assert query is not None and len(query.lexemes) == 3
    outcome = memory_search(
        tenant=tenant, actor=Actor("ben"), query=text, user_id="ben", mode="lexical", limit=10
    )
    assert len(outcome.hits) >= 3
    for hit in outcome.hits:
        tf = _positions(
            sql.SQL("(SELECT lexical_vector FROM memory WHERE id = %(v0)s)"), [hit.memory.pk]
        )
        assert hit.parts["lexical"] == pytest.approx(_reference(tf, query), abs=1e-6)


@pytest.mark.django_db(transaction=True)
def test_the_hnsw_settings_hold_for_the_search_statement_only(tenant: Tenant) -> None:
    """Outside any transaction (a request in autocommit), the search sends its SET LOCALs
    in the same query string as its SELECT: PostgreSQL runs them as one implicit
    transaction, so they apply (no "SET LOCAL can only be used in transaction blocks"
    warning, which a SET sent on its own would raise and then do nothing) and end with
    it (the connection's settings are unchanged afterwards)."""
    memory_add_many(
        tenant=tenant,
        drafts=[
            MemoryDraft(user_id="ben", type="episodic", content=line)
            for line in ("I booked the Kyoto trip.", "The puppy chewed a cable.")
        ],
    )
    connection.ensure_connection()
    notices: list[str] = []
    connection.connection.add_notice_handler(lambda notice: notices.append(notice.message_primary))
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('hnsw.ef_search', true)")
        before = cursor.fetchone()[0]
    assert connection.get_autocommit() and not connection.in_atomic_block
    outcome = memory_search(
        tenant=tenant, actor=Actor("ben"), query="Kyoto trip", user_id="ben", mode="hybrid"
    )
    assert outcome.hits and "Kyoto" in outcome.hits[0].memory.content
    assert outcome.vector_ranking
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('hnsw.ef_search', true)")
        assert cursor.fetchone()[0] == before
    assert not [notice for notice in notices if "SET LOCAL" in notice], notices


# User ids that a naive key (`<tenant>/<user>/<lexeme>`) would confuse with one another,
# and ids with characters outside ASCII (PostgreSQL's length() must count what Python's
# len() counts): the keys are written twice, by the index's SQL function and by Python.
OWNERS = ["ana", "ana/kayak", "an", "a/n/a", "7/ana", "zoë", "用户", "🦊 fox", "O'Brien"]


@pytest.mark.parametrize("owner", OWNERS)
def test_the_owner_index_keys_are_those_the_search_looks_up(tenant: Tenant, owner: str) -> None:
    # The keys of `memory_owner_lexemes` (the lexical index of one user's memories) are
    # exactly what `owner_lexeme_keys` writes for the row's lexemes: one character of
    # difference and the search would look up keys that index no row.
    (result,) = memory_add_many(
        tenant=tenant,
        drafts=[MemoryDraft(user_id=owner, type="fact", content="Kayak trips on Lake Bled")],
    )
    with connection.cursor() as cursor:
        cursor.execute(
            sql.SQL(
                "SELECT {}, tsvector_to_array(o.lexical_vector) FROM memory o WHERE o.id = %s"
            ).format(OWNER_LEXEMES_SQL),
            [result.memory.pk],
        )
        stored, lexemes = cursor.fetchone()
    assert lexemes  # "kayak", "trip", "lake", "bled"
    assert sorted(stored) == sorted(owner_lexeme_keys(tenant.pk, owner, lexemes))


@pytest.mark.parametrize("user_id", ["ana", None], ids=["named-user", "actor-own-branch"])
def test_a_users_lexical_hits_are_read_through_the_owner_index(
    tenant: Tenant, user_id: str | None
) -> None:
    # The step's expression must be the index's, or PostgreSQL cannot use the index and
    # reads the words' postings across the table again; and no plan may compute the
    # index's function row by row as a filter (~25 us a row). Rows just written, which
    # no ANALYZE has counted, are where the planner chose that: the (tenant, user) btree,
    # then the function on each of the user's rows. Sequential scans are off, as on a
    # table too large to read. And the step finds the owner's row, not another user's,
    # whether the caller named the user or searched the tenant as that user.
    memory_add_many(
        tenant=tenant,
        drafts=[
            MemoryDraft(user_id=user, type="fact", content=f"{user} paddles a kayak")
            for user in ("ana", "ben")
        ],
    )
    actor = Actor(user_id="ana")
    where, params = search_where(
        tenant=tenant, actor=actor, user_id=user_id, agent_id=None, types=None, tags=None
    )
    lexical = LexicalQuery(["kayak"], [1.0], 1.0, ["kayak"])
    params |= lexical_hits_params(where, lexical)
    hits = lexical_hits_sql(where, lexical)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(sql.SQL("EXPLAIN {}").format(hits), params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute(hits, params)
        contents = [row[1] for row in cursor.fetchall()]
    assert "memory_lexical_owner" in plan
    assert "Filter: (memory_owner_lexemes" not in plan
    # The ids found are fetched by primary key (or, where the statistics say the table
    # holds a row or two, the table is read by it and hashed); a plan that named the user
    # again read all of the user's rows from the (tenant, user) btree and hashed them.
    assert "Index Scan using memory_pkey" in plan
    assert "memory_tenant_user" not in plan
    assert len(contents) == 1  # ana's, not ben's


def test_the_public_index_keys_are_those_the_search_looks_up(tenant: Tenant) -> None:
    # `memory_lexical_public` indexes a public row under its tenant and the empty owner:
    # the keys `public_lexeme_keys` writes, and none that an owner's lookup could hit.
    (result,) = memory_add_many(
        tenant=tenant,
        drafts=[
            MemoryDraft(user_id="ana", type="fact", content="Kayak trips", scope=MemoryScope.PUBLIC)
        ],
    )
    with connection.cursor() as cursor:
        cursor.execute(
            sql.SQL(
                "SELECT {}, tsvector_to_array(m.lexical_vector) FROM memory m WHERE m.id = %s"
            ).format(PUBLIC_LEXEMES_SQL),
            [result.memory.pk],
        )
        stored, lexemes = cursor.fetchone()
    assert sorted(stored) == sorted(public_lexeme_keys(tenant.pk, lexemes))
    assert not set(stored) & set(owner_lexeme_keys(tenant.pk, "ana", lexemes))


def test_a_tenant_wide_search_reads_public_hits_through_the_tenants_public_keys(
    tenant: Tenant,
) -> None:
    # The public branch looks its terms up in `memory_lexical_public` by keys that name
    # the tenant: no btree of the tenant's rows is read beside it (PostgreSQL ANDed one
    # with the term's postings when the tenant was a filter: a bitmap of every row of
    # the tenant, whatever the term). And it finds this tenant's public row only: not
    # another tenant's public row, not another user's private one.
    other = Tenant.objects.create(name="other")
    for owner, scope, where in [
        ("ben", MemoryScope.PUBLIC, tenant),
        ("cy", MemoryScope.PRIVATE, tenant),
        ("ben", MemoryScope.PUBLIC, other),
    ]:
        memory_add_many(
            tenant=where,
            drafts=[MemoryDraft(user_id=owner, type="fact", content="kayak", scope=scope)],
        )
    where, params = search_where(
        tenant=tenant, actor=Actor(user_id="ana"), user_id=None, agent_id=None, types=None,
        tags=None,
    )  # fmt: skip
    lexical = LexicalQuery(["kayak"], [1.0], 1.0, ["kayak"])
    params |= lexical_hits_params(where, lexical)
    assert where.public_branch is not None
    public_only = replace(where, branches=(where.public_branch,))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(sql.SQL("EXPLAIN {}").format(lexical_hits_sql(public_only, lexical)), params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute(lexical_hits_sql(where, lexical), params)  # every branch
        found = [row[0] for row in cursor.fetchall()]
    assert "memory_lexical_public" in plan
    assert "BitmapAnd" not in plan
    assert "Index Cond: (tenant_id" not in plan
    public = Memory.objects.get(tenant=tenant, user_id="ben")
    assert found == [public.pk]


def test_the_indexes_a_search_reads_keep_no_pending_list() -> None:
    # A GIN pending list is read whole by every scan of its index, whoever's rows it
    # holds: a search of one user's memories would read every row written since the last
    # merge. The model and the database must agree that these three have none.
    names = ["memory_lexical_owner", "memory_lexical_public", "memory_shared_grants"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname, reloptions FROM pg_class WHERE relname = ANY(%s)", [names])
        options = dict(cursor.fetchall())
    assert options == {name: ["fastupdate=off"] for name in names}
    model_indexes = {index.name: index for index in Memory._meta.indexes}
    assert all(model_indexes[name].fastupdate is False for name in names)
