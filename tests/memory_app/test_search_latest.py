"""The newer first for a question about the current state (part `latest`): the credit on
its own, and through HTTP with the real model and PostgreSQL, where lines of a
conversation that state no subject ("I just moved into a flat in Lisbon") are ordered by
when they were said."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from memory_app.selectors.currency import apply_currency
from memory_app.selectors.latest import latest_credits
from memory_app.selectors.search.fusion import best_first
from sessions_app.models import Tenant
from tests.memory_app.score_helpers import score_of_parts
from tests.memory_app.test_memories_api import MEMORIES, add

MARCH = datetime(2026, 3, 7, 10, tzinfo=UTC)


def test_the_credit_places_each_time_in_the_span_of_the_best_answers() -> None:
    first, middle, last, later, old, noise = (uuid.uuid4() for _ in range(6))
    present = MARCH + timedelta(days=100)
    began = {
        first: MARCH, middle: MARCH + timedelta(days=25), last: MARCH + timedelta(days=100),
        later: MARCH + timedelta(days=400), old: MARCH - timedelta(days=3000),
        noise: MARCH + timedelta(days=50),
    }  # fmt: skip
    relevance = {first: 1.0, middle: 0.3, last: 0.5, later: 0.2, old: 0.1, noise: 0.0}
    credits = latest_credits(began, relevance, present)
    # The span is the best answers' (first and last): a memory of long ago or one about
    # something else does not stretch it; before its start is 0, after its end 1, and a
    # time after the moment asked about counts as that moment.
    assert credits == {
        first: 0.0, middle: 0.25, last: 1.0, later: 1.0, old: 0.0, noise: 0.5,
    }  # fmt: skip


def test_one_time_for_the_best_answers_or_none_gives_no_credit() -> None:
    one, other, low = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    began = {one: MARCH, other: MARCH, low: MARCH + timedelta(days=9)}
    assert latest_credits(began, {one: 1.0, other: 0.9, low: 0.1}, MARCH) == dict.fromkeys(
        began, 0.0
    )
    assert latest_credits({}, {}, MARCH) == {}


# What a user said over three sessions: lines of a conversation, which state no subject
# (the move to Porto would, written as a fact).
LINES = [
    ("2026-03-07T10:00:00Z", "I just moved into a flat in Lisbon, near the river."),
    ("2026-03-07T10:01:00Z", "My favourite coffee is a flat white."),
    ("2026-04-18T18:00:00Z", "I ran a 10k on Saturday morning in 52 minutes."),
    ("2026-05-30T09:00:00Z", "I moved to Porto last week for the new job."),
    ("2026-05-30T09:01:00Z", "I read a novel on the train."),
    ("2026-04-18T18:01:00Z", "We adopted a cat called Miso."),
    ("2026-04-18T18:02:00Z", "Finished reading Dune, starting another book."),
    ("2026-06-13T20:00:00Z", "Went hiking in the mountains yesterday with Ana."),
    ("2026-06-13T20:01:00Z", "Miso knocked over my plant again."),
    ("2026-05-30T09:02:00Z", "These days I drink espresso, I gave up flat whites."),
]
AS_OF = "2026-06-20T12:00:00Z"


@pytest.fixture
def said(api: APIClient) -> dict[str, str]:
    ids = {}
    for order, (when, line) in enumerate(LINES):
        response = add(api, content=line, type="episodic", source="conversation_turn",
                       thread_key=f"chat-{when[:10]}", thread_order=order,
                       occurred_at=when)  # fmt: skip
        assert response.status_code == 201, response.content
        ids[line] = str(response.json()["memory"]["id"])
    return ids


def _search(api: APIClient, query: str) -> list[dict[str, Any]]:
    body = {"query": query, "user_id": "alice", "limit": 20, "as_of": AS_OF}
    response = api.post(f"{MEMORIES}/search", body, format="json")
    assert response.status_code == 200, response.content
    return list(response.json()["results"])


@pytest.mark.django_db
def test_a_question_about_now_credits_the_later_lines(api: APIClient, said: dict[str, str]) -> None:
    lisbon, porto = said[LINES[0][1]], said[LINES[3][1]]
    results = _search(api, "Where do I live now?")
    hits = {hit["memory"]["id"]: hit for hit in results}
    # The best answers are the two homes: Lisbon opens their span, Porto closes it.
    assert hits[lisbon]["parts"]["latest"] == 0.0
    assert hits[porto]["parts"]["latest"] == 1.0
    # Lines about other things are placed in that span too, the June ones after it.
    assert 0.0 < hits[said[LINES[2][1]]]["parts"]["latest"] < 1.0
    assert hits[said[LINES[8][1]]]["parts"]["latest"] == 1.0
    parts = hits[porto]["parts"]
    expected = score_of_parts(parts)
    assert hits[porto]["score"] == pytest.approx(expected, abs=1e-5)


@pytest.mark.django_db
def test_of_two_lines_about_as_relevant_the_newer_ranks_first(
    tenant: Tenant, said: dict[str, str]
) -> None:
    lisbon, porto = uuid.UUID(said[LINES[0][1]]), uuid.UUID(said[LINES[3][1]])
    # The older line a little more relevant, as the search scored it (parts elided).
    scored = [(lisbon, 0.60, {"relevance": 1.0}), (porto, 0.58, {"relevance": 0.97})]
    now = datetime.fromisoformat(AS_OF)
    with connection.cursor() as cursor:
        current = apply_currency(cursor, "where do I live now?", now, scored)
        then = apply_currency(cursor, "where did I live in March?", now, scored)
    ranked = sorted(current, key=best_first)
    assert [pk for pk, _, _ in ranked] == [porto, lisbon]
    assert {pk: score for pk, score, _ in then} == {lisbon: 0.60, porto: 0.58}


@pytest.mark.django_db
def test_a_question_about_another_time_has_no_credit(api: APIClient, said: dict[str, str]) -> None:
    for query in ("Where did I live in March?", "What did I run?"):
        results = _search(api, query)
        assert results and all(hit["parts"]["latest"] == 0.0 for hit in results), query
