"""The context finds the session's old turns: every turn is a memory of its user, compacted
turns stay searchable and come back verbatim, through the one memory search."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from celery.signals import task_prerun
from rest_framework.test import APIClient

from memory_app.embedding import embedder
from memory_app.models import Memory, MemorySource
from memory_app.selectors.memories import Actor
from memory_app.selectors.search import MemoryFilters, memory_search
from memory_app.services import turn_queue
from memory_app.services.conversation import conversation_remember_session
from memory_app.services.turn_queue import turns_remember_pending
from memory_app.valkey import valkey
from memory_app.window.tokens import messages_tokens
from sessions_app.models import ChatTurn, Tenant
from sessions_app.services.turn_rollback import turn_rollback
from tests.memory_app.window_helpers import new_session, record

pytestmark = pytest.mark.django_db

TURN = MemorySource.CONVERSATION_TURN


def _turn_memories(session: Any) -> dict[int, Memory]:
    return {m.thread_order: m for m in Memory.objects.filter(session_id=session.pk, source=TURN)}


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
    # Every turn became a memory of its user after its commit, compacted ones included,
    # in the session's thread with the turn's time.
    memories = _turn_memories(session)
    assert sorted(memories) == list(range(1, 33))
    second = memories[2]
    assert "greyhound" in second.thread_context  # its window holds the turn before it
    assert second.thread_key == f"session:{session.pk}"
    assert (second.user_id, second.agent_id, second.type) == ("u1", "shop", "episodic")
    turn = ChatTurn.objects.get(session=session, turn_number=2)
    assert second.occurred_at == turn.occurred_at
    assert second.content == "Her name is Biscuit, she is three.\nBiscuit is a lovely name."

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
    assert any(
        m["content"].startswith("Earlier turns of this session that match")
        for m in body["messages"]
    )

    # Without a query nothing is recalled.
    plain = api.get(f"/api/v1/sessions/{session.pk}/context", {"budget": 600}).json()
    assert not [i for i in plain["included"] if i["kind"] == "recalled_turn"]


def test_remembering_is_idempotent_and_rolled_back_turns_are_forgotten(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    session = _conversation(tenant, django_capture_on_commit_callbacks)
    before = {n: (m.pk, m.thread_context) for n, m in _turn_memories(session).items()}
    assert conversation_remember_session(session_id=session.pk, up_to=32) == 0
    assert {n: (m.pk, m.thread_context) for n, m in _turn_memories(session).items()} == before
    turn_rollback(tenant=tenant, session_id=session.pk, turn_number=31)
    after = _turn_memories(session)
    assert sorted(after) == list(range(1, 31))
    assert "(29)" not in after[30].thread_context.split("\n")[-1]  # window closed over the gap
    assert conversation_remember_session(session_id=session.pk, up_to=32) == 0
    # The rolled-back turn is not recalled, the one before it is.
    found = memory_search(
        tenant=tenant,
        actor=Actor("u1"),
        query="How is work going? (29)",
        user_id="u1",
        filters=MemoryFilters(session_id=session.pk, sources=(TURN,)),
    ).hits
    assert 31 not in {hit.memory.thread_order for hit in found}


def test_the_turn_that_says_it_ranks_above_the_turns_around_it(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    """BM25F on the turns' memories: the turn's own words count twice, its neighbours'
    once. The greyhound turn sits between two long turns, so with the window alone it
    would rank below them."""
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
    hits = memory_search(
        tenant=tenant,
        actor=Actor("u1"),
        query="Did you adopt a greyhound?",
        user_id="u1",
        mode="lexical",
        filters=MemoryFilters(session_id=session.pk, sources=(TURN,)),
    ).hits
    assert [hit.memory.thread_order for hit in hits][:1] == [3]
    assert {hit.memory.thread_order for hit in hits} >= {2, 4}  # still found by its words


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


def _alternating_batch(first: Any, second: Any) -> list[dict[str, Any]]:
    """Five turns for each session, interleaved, as one batch body."""
    step = {"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 10, "output_tokens": 5}
    return [
        {
            "session_id": str(session.pk),
            "user_message": f"{label} question {n}",
            "assistant_response": f"{label} answer {n}",
            "steps": [step],
        }
        for n in range(1, 6)
        for session, label in ((first, "alpha"), (second, "beta"))
    ]


def _batch_marked_then_drained(
    api: APIClient, capture: Any, first: Any, second: Any
) -> turn_queue.DrainReport:
    """Posts the batch while a drain is due: the sessions are marked and no task runs;
    then drains once."""
    ran: list[str] = []

    def count(sender: Any = None, **kwargs: Any) -> None:
        if sender is not None and sender.name.startswith("memory_app.remember_"):
            ran.append(sender.name)

    valkey().set(turn_queue._key("due"), 1, px=60_000)  # a drain is due already
    task_prerun.connect(count, weak=False)
    try:
        with capture(execute=True):
            response = api.post(
                "/api/v1/turns/batch", {"turns": _alternating_batch(first, second)}, format="json"
            )
        assert response.status_code == 200, response.content
        assert [r["status"] for r in response.json()["results"]] == [201] * 10
        assert ran == []  # marked, nothing published
        marks = {m.decode() for m in valkey().zrange(turn_queue._key("pending"), 0, -1)}
        assert {f"{first.pk}:5", f"{second.pk}:5"} <= marks
        assert not _turn_memories(first) and not _turn_memories(second)
        return turns_remember_pending()
    finally:
        task_prerun.disconnect(count)
        valkey().delete(turn_queue._key("due"))


def _assert_each_turn_remembered_with_its_window(first: Any, second: Any) -> None:
    for session, label in ((first, "alpha"), (second, "beta")):
        entries = _turn_memories(session)
        assert sorted(entries) == [1, 2, 3, 4, 5]
        middle = entries[3].thread_context  # two turns before it, itself, one after
        assert f"{label} question 1" in middle and f"{label} answer 4" in middle
        assert f"{label} question 5" not in middle


def test_a_batch_is_remembered_across_its_sessions_by_one_drain(
    tenant: Tenant, api: APIClient, django_capture_on_commit_callbacks: Any
) -> None:
    """A batch sends `turn_recorded` per turn; the hook marks each session's last turn
    and, while a drain is due, publishes nothing. One drain then writes every new turn
    of both sessions, each with its window, as a task per turn would."""
    first, second = new_session(tenant), new_session(tenant)
    report = _batch_marked_then_drained(api, django_capture_on_commit_callbacks, first, second)
    assert report.batches == 1
    assert report.written == 10
    assert report.left == 0
    assert not valkey().exists(turn_queue._key("due"))  # the next turn publishes a drain
    _assert_each_turn_remembered_with_its_window(first, second)
    # A task for a later number finds nothing left to write.
    assert conversation_remember_session(session_id=first.pk, up_to=5) == 0
