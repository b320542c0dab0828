"""A memory whose speaker the query names ranks higher: the names read from the query,
the speaker read from the head of the memory's text in the pool's statement, the
weight added after fusion. Through HTTP with the real model and PostgreSQL, and the
step on its own over hand-made candidates."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection
from psycopg import sql
from rest_framework.test import APIClient

from memory_app.selectors.search.pool import Candidate
from memory_app.selectors.search.speaker import (
    SPEAKER_WEIGHT,
    apply_speaker_match,
    query_speaker_names,
    speaker_sql,
)
from tests.memory_app.test_memories_api import MEMORIES, add

# Two people on one subject, each naming the other: each says something about painting
# by the lake, and both names are in both lines, so the words alone cannot tell whose
# line a question about one of them wants.
CAROLINE = "Caroline: Melanie, I finished another watercolour of the lake at sunset"
MELANIE = "Melanie: Caroline, the kids and I painted pottery by the lake last weekend"
UNLABELLED = "Painting class on Tuesdays at the community centre by the lake"
OTHERS = (
    "Prefers aisle seats on long flights",
    "Allergic to penicillin",
    "Drives a blue 2015 Honda Civic",
    "Plays tennis on Thursday evenings",
)
QUESTION = "What does {name} paint at the lake?"


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("What kind of art does Caroline make?", ["Caroline"]),
        ("What are Joanna's hobbies?", ["Joanna"]),
        ("Did Jon and Gina both go to dance competitions?", ["Jon", "Gina"]),
        ("Where has Dr. Ruiz worked, and where has Ruiz lived?", ["Dr", "Ruiz"]),
        ("Which city have both Jean and John visited?", ["Jean", "John"]),
        ("Wo wohnt Ünal?", ["Wo", "Ünal"]),  # not an English question word: kept
        ("When did I move to the new flat?", []),  # question words and "I" name nobody
        ("I'm planning a trip to Denver, I've asked O'Brien", ["Denver", "O'Brien"]),
        ("what does caroline paint", []),  # nobody named with a capital
        ("", []),
    ],
)
def test_the_names_a_query_holds(query: str, names: list[str]) -> None:
    assert query_speaker_names(query) == names


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content", "named"),
    [
        ("Caroline: I paint", True),
        ("Dr. Ruiz: the results are in", True),
        ("Ünal: merhaba", True),
        ("Caroline:no space after the colon", True),
        ("Melanie: Caroline, hello", False),  # named in the text, not its speaker
        ("caroline: no capital", False),
        ("I think Route 1: it is quicker", False),  # a sentence, not a speaker
        ("A note\nCaroline: on the second line", False),
        ("Caroline", False),  # no colon
        ("", False),
    ],
)
def test_the_speaker_is_the_head_of_the_text(content: str, named: bool) -> None:
    statement = sql.SQL("SELECT {} FROM (VALUES (%(content)s)) AS m(content)").format(
        speaker_sql("m")
    )
    with connection.cursor() as cursor:
        cursor.execute(
            statement, {"content": content, "speakers": ["Caroline", "Ruiz", "Route", "Ünal"]}
        )
        assert cursor.fetchone()[0] is named


def _candidate(named: bool) -> Candidate:
    return Candidate(0.5, 1.0, datetime(2024, 1, 1, tzinfo=UTC), 0.5, 0, None, 80, named)


def test_the_weight_goes_to_the_named_speaker_s_memories_only() -> None:
    ids = [uuid.uuid4() for _ in range(3)]
    candidates = {ids[0]: _candidate(True), ids[1]: _candidate(False)}  # ids[2]: not in pool
    scored = [(pk, 0.4, {"relevance": 0.5}) for pk in ids]
    out = {pk: (score, parts) for pk, score, parts in apply_speaker_match(scored, candidates)}
    assert out[ids[0]] == (pytest.approx(0.4 + SPEAKER_WEIGHT), {"relevance": 0.5, "speaker": 1.0})
    assert out[ids[1]] == (0.4, {"relevance": 0.5, "speaker": 0.0})
    assert out[ids[2]] == (0.4, {"relevance": 0.5, "speaker": 0.0})


def _add(api: APIClient, content: str) -> str:
    response = add(api, content=content, type="episodic")
    assert response.status_code == 201, response.content
    return str(response.json()["memory"]["id"])


def _search(api: APIClient, query: str, **fields: Any) -> list[dict[str, Any]]:
    response = api.post(f"{MEMORIES}/search", {"query": query, **fields}, format="json")
    assert response.status_code == 200, response.content
    return list(response.json()["results"])


def _ids(results: list[dict[str, Any]]) -> list[str]:
    return [hit["memory"]["id"] for hit in results]


@pytest.fixture
def lines(api: APIClient) -> dict[str, str]:
    for content in OTHERS:
        _add(api, content)
    return {
        "Caroline": _add(api, CAROLINE),
        "Melanie": _add(api, MELANIE),
        "unlabelled": _add(api, UNLABELLED),
    }


@pytest.mark.parametrize("scope", [{"user_id": "alice"}, {"acting_user_id": "alice"}])
def test_naming_a_speaker_puts_their_line_first(
    api: APIClient, lines: dict[str, str], scope: dict[str, str]
) -> None:
    # The same question about each of them: only the name changes, and with it the first.
    for name, other in (("Caroline", "Melanie"), ("Melanie", "Caroline")):
        results = _search(api, QUESTION.format(name=name), **scope)
        hits = {hit["memory"]["id"]: hit for hit in results}
        assert _ids(results)[0] == lines[name]
        assert hits[lines[name]]["parts"]["speaker"] == 1.0
        assert hits[lines[other]]["parts"]["speaker"] == 0.0
        assert hits[lines["unlabelled"]]["parts"]["speaker"] == 0.0


def test_the_score_adds_the_speaker_weight(api: APIClient, lines: dict[str, str]) -> None:
    hit = _search(api, QUESTION.format(name="Caroline"), user_id="alice")[0]
    parts = hit["parts"]
    expected = (
        0.6 * parts["relevance"]
        + 0.2 * parts["recency"]
        + 0.1 * parts["importance"]
        + 0.1 * parts["access"]
        + SPEAKER_WEIGHT * parts["speaker"]
        + parts["length"]
    )
    assert parts["speaker"] == 1.0
    assert hit["score"] == pytest.approx(expected, abs=1e-5)


def test_a_query_that_names_nobody_weighs_no_speaker(api: APIClient, lines: dict[str, str]) -> None:
    results = _search(api, "what is painted at the lake at sunset", user_id="alice")
    assert {hit["parts"]["speaker"] for hit in results} == {0.0}
    assert set(lines.values()) <= set(_ids(results))
