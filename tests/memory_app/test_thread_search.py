"""Memories that know where they came from: thread windows, BM25 statistics kept by the
database, bounded lexical step, and the API fields."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from memory_app.models import Memory
from memory_app.selectors.memories import Actor
from memory_app.selectors.search import lexical_query, memory_search
from memory_app.services.memories import (
    MemoryDraft,
    memory_add_many,
    memory_delete,
    memory_update,
)
from sessions_app.models import Tenant

pytestmark = pytest.mark.django_db

DIALOGUE = [
    "Ana: Did you finally book the trip to Kyoto?",
    "Ben: Yes! On the 14th, flying out early in the morning.",
    "Ana: Lovely. How is the new puppy doing?",
    "Ben: He chewed through two cables already.",
    "Ana: And the pottery class you started?",
    "Ben: I dropped it, the teacher moved away.",
]


def _thread(
    tenant: Tenant, user: str, lines: list[str], orders: list[int] | None = None
) -> list[Memory]:
    orders = orders if orders is not None else list(range(len(lines)))
    drafts = [
        MemoryDraft(
            user_id=user, type="episodic", content=line, thread_key="chat-1", thread_order=order
        )
        for line, order in zip(lines, orders, strict=True)
    ]
    return [result.memory for result in memory_add_many(tenant=tenant, drafts=drafts)]


def _stats(tenant: Tenant, user: str) -> tuple[dict[str, int], tuple[int, int]]:
    """The trigger-kept statistics, and the same recomputed from the memory rows."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT lexeme, df FROM memory_term_stat WHERE tenant_id = %s AND user_id = %s"
            " AND df > 0",
            [tenant.pk, user],
        )
        kept = dict(cursor.fetchall())
        cursor.execute(
            "SELECT lexeme, count(*) FROM memory, unnest(tsvector_to_array(lexical_vector))"
            " AS lexeme WHERE tenant_id = %s AND user_id = %s GROUP BY lexeme",
            [tenant.pk, user],
        )
        recomputed = dict(cursor.fetchall())
        cursor.execute(
            "SELECT documents, lexemes FROM memory_lexicon_stat WHERE tenant_id = %s"
            " AND user_id = %s",
            [tenant.pk, user],
        )
        totals = cursor.fetchone() or (0, 0)
        cursor.execute(
            "SELECT count(*), coalesce(sum(length(lexical_vector)), 0) FROM memory"
            " WHERE tenant_id = %s AND user_id = %s",
            [tenant.pk, user],
        )
        actual = cursor.fetchone()
    assert kept == recomputed
    assert tuple(totals) == tuple(actual)
    return kept, tuple(totals)


def test_a_turn_is_found_by_the_words_of_its_neighbours(tenant: Tenant) -> None:
    threaded = _thread(tenant, "ben", DIALOGUE)
    loose = memory_add_many(
        tenant=tenant,
        drafts=[MemoryDraft(user_id="bob", type="episodic", content=line) for line in DIALOGUE],
    )
    answer, loose_answer = threaded[1], loose[1].memory
    query = "When is the Kyoto trip?"
    found = memory_search(
        tenant=tenant, actor=Actor("ben"), query=query, user_id="ben", mode="lexical"
    )
    assert answer.pk in [hit.memory.pk for hit in found.hits[:2]]
    # The same line without a thread shares no word with the question.
    alone = memory_search(
        tenant=tenant, actor=Actor("bob"), query=query, user_id="bob", mode="lexical"
    )
    assert loose_answer.pk not in [hit.memory.pk for hit in alone.hits]
    hybrid = memory_search(tenant=tenant, actor=Actor("ben"), query=query, user_id="ben")
    assert answer.pk in [hit.memory.pk for hit in hybrid.hits[:2]]
    assert hybrid.hits[0].parts["relevance"] == 1.0
    assert all(0.0 <= hit.parts["relevance"] <= 1.0 for hit in hybrid.hits)


def test_the_line_that_says_it_ranks_above_the_lines_around_it(tenant: Tenant) -> None:
    """BM25F: a word of a memory's own text counts twice, a neighbour's once. Every window
    around the Kyoto line holds the query's words once; the Kyoto line's own window is the
    longest of them, so with the window alone (one field) length normalisation would put
    the line that says it below its neighbours."""
    lines = [
        "Ana: How was the weekend? Anything fun with the family, the garden or the neighbours?",
        "Ben: We spent Saturday at the lake house with my sister, her husband and their boys.",
        "Ana: I finally booked the Kyoto trip.",
        "Ben: Nice.",
        "Ana: Rain all week.",
    ]
    memories = _thread(tenant, "ben", lines)
    query = "Kyoto trip booked"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, length(lexical_vector) FROM memory WHERE user_id = 'ben'"
            " AND thread_context ILIKE '%%kyoto%%'"
        )
        lengths = dict(cursor.fetchall())
    assert set(lengths) == {memory.pk for memory in memories[1:5]}
    assert max(lengths, key=lambda pk: lengths[pk]) == memories[2].pk
    for mode in ("lexical", "hybrid"):
        found = memory_search(
            tenant=tenant, actor=Actor("ben"), query=query, user_id="ben", mode=mode
        )
        assert found.hits[0].memory.pk == memories[2].pk, mode
    lexical = memory_search(
        tenant=tenant, actor=Actor("ben"), query=query, user_id="ben", mode="lexical"
    )
    scores = {hit.memory.pk: hit.parts["lexical"] for hit in lexical.hits}
    assert set(scores) == set(lengths)  # the neighbours are still found by its words
    assert all(scores[memories[2].pk] > scores[pk] for pk in lengths if pk != memories[2].pk)


def test_windows_are_right_whatever_order_the_turns_arrive_in(tenant: Tenant) -> None:
    # Arrive shuffled: each arrival rewrites the windows it falls in.
    orders = [3, 0, 5, 1, 4, 2]
    _thread(tenant, "ben", [DIALOGUE[order] for order in orders], orders)
    rows = list(Memory.objects.filter(user_id="ben").order_by("thread_order"))
    assert [row.thread_order for row in rows] == list(range(6))
    for index, row in enumerate(rows):
        expected = "\n".join(DIALOGUE[max(0, index - 2) : index + 2])
        assert row.thread_context == expected, index
    _stats(tenant, "ben")


def test_a_turn_appended_to_a_thread_rewrites_only_the_turn_before_it(tenant: Tenant) -> None:
    # A rewrite of a window is an UPDATE of an indexed column: a new row version in every
    # index, the HNSW graph's included. The new turn is written with its own window; of
    # the rows already there, only the one whose window now reaches it is rewritten.
    rewrites = []
    for order, line in enumerate(DIALOGUE):
        with CaptureQueriesContext(connection) as queries:
            _thread(tenant, "ben", [line], [order])
        rewrites.append(
            sum('UPDATE "memory" SET "thread_context"' in query["sql"] for query in queries)
        )
    assert rewrites == [0, 1, 1, 1, 1, 1]
    rows = list(Memory.objects.filter(user_id="ben").order_by("thread_order"))
    for index, row in enumerate(rows):
        assert row.thread_context == "\n".join(DIALOGUE[max(0, index - 2) : index + 2]), index
    _stats(tenant, "ben")


def test_thread_order_defaults_to_the_order_of_the_adds(tenant: Tenant) -> None:
    drafts = [
        MemoryDraft(user_id="ben", type="episodic", content=line, thread_key="chat-9")
        for line in DIALOGUE[:3]
    ]
    memory_add_many(tenant=tenant, drafts=drafts)
    drafts = [MemoryDraft(user_id="ben", type="episodic", content=DIALOGUE[3], thread_key="chat-9")]
    memory_add_many(tenant=tenant, drafts=drafts)
    rows = Memory.objects.filter(user_id="ben").order_by("thread_order")
    assert [(row.content, row.thread_order) for row in rows] == [
        (line, order) for order, line in enumerate(DIALOGUE[:4])
    ]


def test_similar_turns_of_a_thread_are_not_merged(tenant: Tenant) -> None:
    lines = ["Ben: I went running this morning.", "Ben: I went running this morning too!"]
    threaded = _thread(tenant, "ben", lines)
    assert len({memory.pk for memory in threaded}) == 2
    # Free-standing, the same two are one fact restated: merged.
    loose = memory_add_many(
        tenant=tenant,
        drafts=[MemoryDraft(user_id="bob", type="episodic", content=line) for line in lines],
    )
    assert loose[1].action == "merged"


def test_bm25_statistics_follow_every_write(tenant: Tenant) -> None:
    memories = _thread(tenant, "ben", DIALOGUE)
    kept, totals = _stats(tenant, "ben")
    assert kept["kyoto"] == 3  # its own window and its two followers' ("trip" too)
    assert totals[0] == len(DIALOGUE)
    memory_update(memory=memories[0], changes={"content": "Ana: Did you book the Osaka trip?"})
    kept, _ = _stats(tenant, "ben")
    assert "kyoto" not in kept and kept["osaka"] == 3
    memory_delete(memory=Memory.objects.get(pk=memories[2].pk))
    kept, totals = _stats(tenant, "ben")
    assert totals[0] == len(DIALOGUE) - 1
    # The gap closed: the line after the deleted one now follows the one before it.
    window = Memory.objects.get(pk=memories[3].pk).thread_context
    assert window.split("\n")[:2] == ["Ana: Did you book the Osaka trip?", DIALOGUE[1]]


def test_the_lexical_step_drops_the_most_frequent_terms_past_its_bound(tenant: Tenant) -> None:
    lines = [f"Ben: the weather was lovely on day {n}" for n in range(30)]
    lines.append("Ben: the weather in Kyoto was lovely")
    memory_add_many(
        tenant=tenant,
        drafts=[MemoryDraft(user_id="ben", type="episodic", content=line) for line in lines],
    )
    with connection.cursor() as cursor:
        full = lexical_query(cursor, tenant=tenant, user_id="ben", text="lovely weather in Kyoto")
        assert full is not None and set(full.lexemes) == {"love", "weather", "kyoto"}
        with override_settings(ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS=5):
            bounded = lexical_query(
                cursor, tenant=tenant, user_id="ben", text="lovely weather in Kyoto"
            )
    # Only the rarest term finds candidates; every term still scores them.
    assert bounded is not None and bounded.candidate_lexemes == ["kyoto"]
    assert set(bounded.lexemes) == {"love", "weather", "kyoto"}
    assert full.idfs[full.lexemes.index("kyoto")] > full.idfs[full.lexemes.index("weather")]


def test_a_term_in_most_rows_finds_no_candidates(tenant: Tenant) -> None:
    """A speaker's name is in every line: it still scores, but only the rarer terms (or
    the vector side) find rows, so a name does not make every row a candidate."""
    lines = [f"Ben: bought groceries at the market on day {n}" for n in range(8)]
    lines += ["Ben: the museum in Kyoto was closed", "Ana: Kyoto again?"]
    memory_add_many(
        tenant=tenant,
        drafts=[MemoryDraft(user_id="ben", type="episodic", content=line) for line in lines],
    )
    with connection.cursor() as cursor:
        query = lexical_query(cursor, tenant=tenant, user_id="ben", text="Ben in Kyoto")
        only_common = lexical_query(cursor, tenant=tenant, user_id="ben", text="Ben")
    assert query is not None and set(query.lexemes) == {"ben", "kyoto"}
    assert query.candidate_lexemes == ["kyoto"]
    # The rarest term a query has finds candidates however common, within the bound.
    assert only_common is not None and only_common.candidate_lexemes == ["ben"]
    outcome = memory_search(
        tenant=tenant,
        actor=Actor(user_id="ben"),
        query="Ben in Kyoto",
        user_id="ben",
        mode="lexical",
    )
    assert [hit.memory.content for hit in outcome.hits][:1] == [
        "Ben: the museum in Kyoto was closed"
    ]
    assert len(outcome.lexical_ranking) == 2


def test_terms_past_the_bound_still_rank_what_the_rarer_terms_found(tenant: Tenant) -> None:
    """Two lines name Kyoto; only one also says the query's other words, which six of the
    37 lines say. With the bound at Kyoto's postings, those words find nothing
    themselves but decide which Kyoto line comes first (Kyoto alone ranks the shorter
    line first, by BM25's length normalisation)."""
    lines = [f"Ben: bought groceries at the market on day {n}" for n in range(30)]
    lines += [f"Ben: the weather was lovely on day {n}" for n in range(5)]
    lines += ["Ben: the weather in Kyoto was lovely that week", "Ben: Kyoto temples"]
    memory_add_many(
        tenant=tenant,
        drafts=[MemoryDraft(user_id="ben", type="episodic", content=line) for line in lines],
    )
    with override_settings(ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS=2):
        outcome = memory_search(
            tenant=tenant,
            actor=Actor(user_id="ben"),
            query="lovely weather in Kyoto",
            user_id="ben",
            mode="lexical",
            limit=5,
        )
    contents = [hit.memory.content for hit in outcome.hits]
    assert contents[:2] == ["Ben: the weather in Kyoto was lovely that week", "Ben: Kyoto temples"]
    assert len(outcome.lexical_ranking) == 2  # the other weather lines were never candidates


def test_a_rarest_term_past_the_bound_finds_nothing_but_still_scores(tenant: Tenant) -> None:
    """ "Kyoto" is the query's rarest term, in 4 lines; with the bound at 3 rows it could
    only have read an arbitrary 3 of them (table order, not score), so it finds none.
    The vector side still proposes the Kyoto lines, and their BM25 still counts."""
    lines = [f"Ben: the Kyoto trip, day {n}" for n in range(4)]
    lines += [f"Ben: groceries at the market on day {n}" for n in range(6)]
    memory_add_many(
        tenant=tenant,
        drafts=[MemoryDraft(user_id="ben", type="episodic", content=line) for line in lines],
    )
    with override_settings(ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS=3):
        with connection.cursor() as cursor:
            query = lexical_query(cursor, tenant=tenant, user_id="ben", text="Kyoto")
        lexical = memory_search(
            tenant=tenant, actor=Actor("ben"), query="Kyoto", user_id="ben", mode="lexical"
        )
        hybrid = memory_search(
            tenant=tenant, actor=Actor("ben"), query="Kyoto", user_id="ben", mode="hybrid"
        )
    assert query is not None and query.lexemes == ["kyoto"] and query.candidate_lexemes == []
    assert lexical.hits == [] and lexical.lexical_ranking == []
    assert hybrid.lexical_ranking == [] and hybrid.vector_ranking
    kyoto = [hit for hit in hybrid.hits if "Kyoto" in hit.memory.content]
    assert len(kyoto) == 4 and all(hit.parts["lexical"] > 0 for hit in kyoto)
    assert all(hit.parts["lexical"] == 0 for hit in hybrid.hits if hit not in kyoto)


def test_a_tenant_wide_bound_counts_the_rows_the_actor_cannot_see(tenant: Tenant) -> None:
    """A tenant-wide search's lexical step reads the tenant's rows that hold a candidate
    term, then keeps those the actor may see, so the bound is on the tenant's postings,
    other users' private rows included. Eight private Kyoto lines of eight users and one
    public one: with the bound at 9 Ann finds the public line; at 8 the term's nine
    postings are past it and nothing is read."""
    drafts = [
        MemoryDraft(user_id=f"user-{n}", type="episodic", content=f"My Kyoto trip, take {n}")
        for n in range(8)
    ]
    drafts.append(
        MemoryDraft(user_id="ops", type="semantic", content="Kyoto office hours", scope="public")
    )
    memory_add_many(tenant=tenant, drafts=drafts)
    for bound, expected in ((9, ["Kyoto office hours"]), (8, [])):
        with override_settings(ENGRAM_MEMORY_LEXICAL_MAX_POSTINGS=bound):
            outcome = memory_search(
                tenant=tenant, actor=Actor(user_id="ann"), query="Kyoto", mode="lexical"
            )
        assert [hit.memory.content for hit in outcome.hits] == expected, bound


def test_a_long_window_keeps_its_lexical_vector_in_the_row(tenant: Tenant) -> None:
    """BM25 reads a row's `lexical_vector` twice per query term; out of line, each read
    is a TOAST lookup (the column is kept in line by a migration). A thread whose windows
    make the rows larger than PostgreSQL keeps in a page without toasting: the embedding
    and the window go out of line, the lexical vector stays in the row, and search still
    ranks from it."""
    words = [f"{stem}{n}" for n in range(40) for stem in ("alpha", "quartz", "meadow")]
    lines = [f"Ben: {' '.join(words[i * 24 : i * 24 + 24])}" for i in range(5)]
    memories = _thread(tenant, "ben", lines)
    with connection.cursor() as cursor:
        cursor.execute(
            # 1,544 bytes: a vector(384)'s raw size, whether it is stored in line or not
            "SELECT 1544 + octet_length(thread_context) + pg_column_size(lexical_vector),"
            " pg_column_toast_chunk_id(embedding) IS NOT NULL,"
            " pg_column_toast_chunk_id(lexical_vector) IS NULL"
            " FROM memory WHERE id = ANY(%s)",
            [[memory.pk for memory in memories]],
        )
        rows = cursor.fetchall()
    assert all(size > 2400 for size, _, _ in rows)  # past the ~2 kB toast threshold
    assert all(embedding_out for _, embedding_out, _ in rows)
    assert all(lexical_inline for _, _, lexical_inline in rows)
    found = memory_search(
        tenant=tenant, actor=Actor("ben"), query="quartz7 meadow7", user_id="ben", mode="lexical"
    )
    assert found.hits[0].memory.pk == memories[0].pk


def test_thread_fields_through_the_api(api: APIClient) -> None:
    body: dict[str, Any] = {
        "user_id": "ben",
        "type": "episodic",
        "content": DIALOGUE[0],
        "thread_key": "locomo-1/session-1",
        "thread_order": 7,
        "occurred_at": "2023-05-08T13:56:00Z",
    }
    response = api.post("/api/v1/memories", body, format="json")
    assert response.status_code == 201, response.content
    memory = response.json()["memory"]
    assert memory["thread_key"] == "locomo-1/session-1" and memory["thread_order"] == 7
    assert memory["occurred_at"].startswith("2023-05-08T13:56")
    bulk = api.post(
        "/api/v1/memories/bulk",
        [{**body, "content": DIALOGUE[1], "thread_order": 8}],
        format="json",
    )
    assert bulk.status_code == 200, bulk.content
    first = Memory.objects.get(pk=memory["id"])
    assert first.thread_context == "\n".join(DIALOGUE[:2])
    for bad in ({"thread_order": -1}, {"thread_order": "x"}, {"thread_key": "k" * 256}):
        response = api.post("/api/v1/memories", {**body, **bad}, format="json")
        assert response.status_code == 400, response.content
        assert set(bad) <= set(response.json()["error"]["fields"])
