"""The context finds old turns: compacted turns stay searchable and come back verbatim."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from celery.signals import task_prerun
from django.db import connection
from rest_framework.test import APIClient

from memory_app.embedding import embed_query, embedder
from memory_app.models import TurnIndexEntry
from memory_app.selectors.search import bounded_lexical_query
from memory_app.selectors.turn_search import _lexical_query, session_turn_search
from memory_app.services.turn_index import turn_index_session, turn_index_update
from memory_app.window.tokens import messages_tokens
from sessions_app.models import ChatTurn, Tenant
from tests.memory_app.window_helpers import new_session, record

pytestmark = pytest.mark.django_db

FILLER = [
    ("How was your weekend?", "Quiet, mostly reading on the balcony."),
    ("Any plans for dinner?", "Maybe pasta, nothing fancy."),
    ("Did you watch the match?", "Only the second half, it was tense."),
    ("How is work going?", "Busy week, lots of meetings."),
]


def _conversation(tenant: Tenant, capture: Any) -> Any:
    session = new_session(tenant)
    with capture(execute=True):
        record(tenant, session, "Guess what, I adopted a greyhound!", "Wow! What is its name?")
    with capture(execute=True):
        record(tenant, session, "Her name is Biscuit, she is three.", "Biscuit is a lovely name.")
    for index in range(30):
        user, reply = FILLER[index % len(FILLER)]
        with capture(execute=True):
            record(tenant, session, f"{user} ({index})", reply)
    return session


def test_a_compacted_turn_comes_back_verbatim(
    tenant: Tenant, api: APIClient, django_capture_on_commit_callbacks: Any
) -> None:
    session = _conversation(tenant, django_capture_on_commit_callbacks)
    assert ChatTurn.objects.get(session=session, turn_number=2).compacted
    # Every turn was indexed after its commit, compacted ones included.
    assert TurnIndexEntry.objects.filter(session_id=session.pk).count() == 32
    entry = TurnIndexEntry.objects.get(session_id=session.pk, turn_number=2)
    assert "greyhound" in entry.thread_context  # its window holds the turn before it

    # "greyhound" is only in turn 1; the name is only in turn 2: the window finds it.
    response = api.get(
        f"/api/v1/sessions/{session.pk}/context",
        {"query": "What is the name of the greyhound?", "budget": 600},
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["total_tokens"] <= 600
    assert messages_tokens(body["messages"]) == body["total_tokens"]
    text = "\n".join(m["content"] for m in body["messages"])
    assert "Her name is Biscuit, she is three." in text
    recalled = [i for i in body["included"] if i["kind"] == "recalled_turn"]
    assert "recalled:2" in {i["key"] for i in recalled}
    assert body["parts"]["recalled_turn"]["included"] == len(recalled)
    assert any(m["content"].startswith("Earlier turns that match") for m in body["messages"])

    # Without a query nothing is recalled.
    plain = api.get(f"/api/v1/sessions/{session.pk}/context", {"budget": 600}).json()
    assert not [i for i in plain["included"] if i["kind"] == "recalled_turn"]


def test_indexing_is_idempotent_and_skips_rolled_back_turns(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    session = _conversation(tenant, django_capture_on_commit_callbacks)
    turn = ChatTurn.objects.get(session=session, turn_number=2)
    before = TurnIndexEntry.objects.get(pk=turn.pk)
    assert turn_index_update(turn_id=turn.pk) == 1  # its own row only: windows unchanged
    after = TurnIndexEntry.objects.get(pk=turn.pk)
    assert (after.text, after.thread_context) == (before.text, before.thread_context)
    assert TurnIndexEntry.objects.filter(session_id=session.pk).count() == 32
    ChatTurn.objects.filter(pk=turn.pk).update(rolled_back=True)
    assert turn_index_update(turn_id=turn.pk) == 0


def test_the_turn_that_says_it_ranks_above_the_turns_around_it(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    """BM25F on the turn index: the turn's own words count twice, its neighbours' once.
    The greyhound turn sits between two long turns, so its window is the longest of the
    three that hold its words, and with the window alone it would rank last of them."""
    turns = [
        ("Hi.", "Hello."),
        (
            "We spent the whole weekend at the lake house with my sister and her boys.",
            "That sounds like a lovely and very busy weekend with the family, with the boat.",
        ),
        ("I adopted a greyhound.", "Congratulations!"),
        (
            "The garden needs a lot of work before the neighbours come over for the barbecue.",
            "Start with the hedge and the lawn, then the flower beds along the fence, in May.",
        ),
        ("Rain again.", "Yes."),
        ("Bye.", "See you."),
    ]
    session = new_session(tenant)
    for user, reply in turns:
        with django_capture_on_commit_callbacks(execute=True):
            record(tenant, session, user, reply)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT turn_number, length(lexical_vector) FROM memory_turn_index"
            " WHERE session_id = %s AND thread_context ILIKE '%%greyhound%%'",
            [session.pk],
        )
        lengths = dict(cursor.fetchall())
    assert set(lengths) == {2, 3, 4}
    assert max(lengths, key=lambda number: lengths[number]) == 3
    query = "Did you adopt a greyhound?"
    hits = session_turn_search(
        session_id=session.pk, query=query, query_vector=embed_query(query), limit=5, weight=0.0
    )
    assert [hit.turn_number for hit in hits][:1] == [3]
    assert {hit.turn_number for hit in hits} >= {2, 4}  # still found by its words


def test_turn_search_counts_the_turns_that_hold_each_query_term(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    """The turn search's BM25 statistics (`_lexical_query`): per query term, the number
    of the session's indexed turns whose window holds it, and the session's totals,
    recounted here from the rows themselves; another session's turns do not count."""
    session = _conversation(tenant, django_capture_on_commit_callbacks)
    other = new_session(tenant)
    with django_capture_on_commit_callbacks(execute=True):
        record(tenant, other, "My greyhound Biscuit loves the beach.", "Lovely!")
    query = "Is the greyhound's name Biscuit, and how was the match at the weekend?"
    with connection.cursor() as cursor:
        lexical = _lexical_query(cursor, session.pk, query)
        cursor.execute(
            "SELECT lexeme, count(*) FROM memory_turn_index,"
            " unnest(tsvector_to_array(lexical_vector)) AS lexeme"
            " WHERE session_id = %s GROUP BY lexeme",
            [session.pk],
        )
        recount = dict(cursor.fetchall())
        cursor.execute(
            "SELECT count(*), sum(length(lexical_vector)) FROM memory_turn_index"
            " WHERE session_id = %s",
            [session.pk],
        )
        documents, length = cursor.fetchone()
    assert lexical is not None
    assert set(lexical.lexemes) >= {"greyhound", "biscuit", "match", "weekend"}
    expected = bounded_lexical_query(
        [(lexeme, recount.get(lexeme, 0)) for lexeme in lexical.lexemes], documents, length
    )
    assert expected is not None
    assert (lexical.lexemes, lexical.idfs) == (expected.lexemes, expected.idfs)
    assert lexical.average_length == expected.average_length
    assert 0 < recount["greyhound"] < recount["weekend"] < documents  # not all alike


def test_a_context_embeds_a_new_query_once(
    tenant: Tenant,
    api: APIClient,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The session's texts are embedded on its first context and cached; a later context
    with a new query runs the model once, for the query (the turn recall, the memory
    search and the scoring of the candidates share its vector). The real model, counted."""
    session = _conversation(tenant, django_capture_on_commit_callbacks)
    url = f"/api/v1/sessions/{session.pk}/context"
    assert api.get(url, {"query": "first question about the greyhound"}).status_code == 200
    model = embedder()
    real = model.embed
    batches: list[list[str]] = []

    def counted(texts: list[str]) -> list[list[float]]:
        batches.append(list(texts))
        return real(texts)

    monkeypatch.setattr(model, "embed", counted)
    query = f"What did the dog eat on {uuid.uuid4().hex[:8]}?"
    response = api.get(url, {"query": query, "budget": 600})
    assert response.status_code == 200, response.content
    assert batches == [[query]]


def test_a_batch_indexes_a_sessions_turns_with_one_task(
    tenant: Tenant, api: APIClient, django_capture_on_commit_callbacks: Any
) -> None:
    """A batch sends `turn_recorded` per turn, but the index is published once per
    session (at its last turn there) and that task indexes every new turn with its
    window, as a task per turn did."""
    first, second = new_session(tenant), new_session(tenant)
    step = {"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 10, "output_tokens": 5}
    turns = [
        {
            "session_id": str(session.pk),
            "user_message": f"{label} question {n}",
            "assistant_response": f"{label} answer {n}",
            "steps": [step],
        }
        for n in range(1, 6)
        for session, label in ((first, "alpha"), (second, "beta"))
    ]
    ran: list[tuple[str, tuple[Any, ...]]] = []

    def count(sender: Any = None, args: Any = (), **kwargs: Any) -> None:
        if sender is not None and sender.name.startswith("memory_app.index_"):
            ran.append((sender.name, tuple(args or ())))

    task_prerun.connect(count, weak=False)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = api.post("/api/v1/turns/batch", {"turns": turns}, format="json")
    finally:
        task_prerun.disconnect(count)
    assert response.status_code == 200, response.content
    assert [r["status"] for r in response.json()["results"]] == [201] * 10
    assert sorted(ran) == sorted(
        [
            ("memory_app.index_session_turns", (str(first.pk), 5)),
            ("memory_app.index_session_turns", (str(second.pk), 5)),
        ]
    )
    for session, label in ((first, "alpha"), (second, "beta")):
        entries = {e.turn_number: e for e in TurnIndexEntry.objects.filter(session_id=session.pk)}
        assert sorted(entries) == [1, 2, 3, 4, 5]
        middle = entries[3].thread_context
        assert f"{label} question 2" in middle and f"{label} answer 4" in middle
        assert f"{label} question 1" not in middle
    # A task for a later number finds nothing left to index.
    assert turn_index_session(session_id=first.pk, up_to=5) == 0
