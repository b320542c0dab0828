"""The memories that state what the question asks for rank a little higher (part
`asked`), through HTTP with the real model and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from memory_app.selectors.search import asked_subject
from tests.memory_app.score_helpers import score_of_parts
from tests.memory_app.test_memories_api import add, search

pytestmark = pytest.mark.django_db

# A user's facts: the move answers "where do I live?" without a word of it, and the metro
# line sounds more like the question than the move does.
FACTS = [
    "I take the metro to the office.",
    "I moved to Porto last week for the new job.",
    "My phone number is 555 0100.",
    "I work at Acme Robotics.",
    "The new neighbours are friendly.",
    "I visited my parents in the village.",
]


@pytest.fixture
def facts(api: APIClient) -> dict[str, str]:
    ids = {}
    for content in FACTS:
        response = add(api, content=content, type="fact")
        assert response.status_code == 201, response.content
        ids[content] = response.json()["memory"]["id"]
    return ids


def _by_content(results: list[dict[str, Any]]) -> list[str]:
    return [hit["memory"]["content"] for hit in results]


def test_the_memory_stating_the_asked_subject_ranks_first(
    api: APIClient, facts: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    results = search(api, "Where do I live?", user_id="alice", limit=6)
    assert _by_content(results)[0] == FACTS[1], _by_content(results)
    asked = {hit["memory"]["content"]: hit["parts"]["asked"] for hit in results}
    assert asked == {content: float(content == FACTS[1]) for content in asked}
    assert results[0]["score"] == pytest.approx(score_of_parts(results[0]["parts"]), abs=1e-5)
    # Without the credit the line that sounds like the question comes first.
    monkeypatch.setattr(asked_subject, "ASKED_WEIGHT", 0.0)
    plain = search(api, "Where do I live?", user_id="alice", limit=6)
    assert _by_content(plain)[0] != FACTS[1], _by_content(plain)


def test_who_do_i_work_for_credits_the_employer(api: APIClient, facts: dict[str, str]) -> None:
    results = search(api, "Who do I work for?", user_id="alice", limit=6)
    assert _by_content(results)[0] == FACTS[3]
    assert [hit["parts"]["asked"] for hit in results] == [1.0] + [0.0] * (len(results) - 1)


def test_a_question_asking_for_no_subject_reads_nothing_more(
    api: APIClient, facts: dict[str, str]
) -> None:
    with CaptureQueriesContext(connection) as queries:
        results = search(api, "Tell me about the neighbours", user_id="alice", limit=6)
    assert results and all(hit["parts"]["asked"] == 0.0 for hit in results)
    assert not any("m.subject = " in query["sql"] for query in queries.captured_queries)


def test_the_older_home_is_credited_and_stays_below_its_successor(api: APIClient) -> None:
    lisbon = add(api, content="I moved to Lisbon.", type="fact").json()["memory"]["id"]
    porto = add(api, content="I moved to Porto.", type="fact").json()["memory"]["id"]
    results = search(api, "Where do I live?", user_id="alice", limit=5)
    hits = {hit["memory"]["id"]: hit for hit in results}
    assert hits[lisbon]["parts"]["asked"] == 1.0 and hits[porto]["parts"]["asked"] == 1.0
    assert hits[lisbon]["parts"]["superseded"] == 1.0
    assert _by_content(results)[:2] == ["I moved to Porto.", "I moved to Lisbon."]


def test_a_question_of_a_named_time_credits_only_that_time_s_statement(api: APIClient) -> None:
    # March's line tells of the flat in Lisbon without stating a subject; the move to
    # Porto, told in May, states home. "Where did I live in March?" asks for March's home.
    march = add(
        api,
        content="I just moved into a flat in Lisbon, near the river.",
        type="episodic",
        occurred_at="2026-03-07T10:00:00Z",
    ).json()["memory"]["id"]
    may = add(api, content="I moved to Porto last week for the new job.", type="fact",
              occurred_at="2026-05-30T09:00:00Z").json()["memory"]["id"]  # fmt: skip
    for day, line in enumerate(("I ran a 10k on Saturday morning.", "We adopted a cat.")):
        add(api, content=line, type="episodic", occurred_at=f"2026-04-1{day}T18:00:00Z")
    when = {"user_id": "alice", "limit": 4, "as_of": "2026-06-20T12:00:00Z"}
    results = search(api, "Where did I live in March?", **when)
    hits = {hit["memory"]["id"]: hit for hit in results}
    assert results[0]["memory"]["id"] == march, _by_content(results)
    assert hits[may]["parts"]["asked"] == 0.0 and hits[may]["parts"]["time"] == 0.0
    # Asked about now, the move is the answer and is credited.
    now = search(api, "Where do I live now?", **when)
    assert now[0]["memory"]["id"] == may and now[0]["parts"]["asked"] == 1.0
