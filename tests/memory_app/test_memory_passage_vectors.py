"""A memory of several sentences is also embedded passage by passage, and the search weighs
it by its best passage: a fact said in passing inside a long message is found by a
question about that fact. Passages follow the memory's text (add, merge, edit, turn
memories) and go with it (delete, erasure)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from memory_app.embedding import embed_query, embed_texts
from memory_app.models import Memory, MemoryPassage, MemorySource
from memory_app.passage_vectors.text import passage_texts

pytestmark = pytest.mark.django_db

MEMORIES = "/api/v1/memories"
STEP = [{"step_type": "response", "input_tokens": 5, "output_tokens": 5}]

# A request about one thing with the fact asked about said in passing, as people write.
ASIDE = (
    "I'm looking for some healthy lunch recipes that I can prepare on Sunday evenings. "
    "Something with lentils or chickpeas would be great, and nothing too spicy please. "
    "By the way, I volunteered at the Portland Film Festival last month and loved it. "
    "Also, do you know whether cooked quinoa keeps well in the fridge for four days?"
)
QUESTION = "Which film festival did I volunteer at?"


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _add(api: APIClient, content: str, user: str = "alice", **fields: Any) -> dict[str, Any]:
    body = {"user_id": user, "type": "episodic", "content": content, **fields}
    response = api.post(MEMORIES, body, format="json")
    assert response.status_code == 201, response.content
    return response.json()["memory"]


def _passages(memory_id: str) -> list[list[float]]:
    rows = MemoryPassage.objects.filter(memory_id=memory_id).order_by("ordinal")
    return [list(row.embedding) for row in rows]


def test_a_text_is_cut_into_sentence_groups_of_a_dozen_words_or_more() -> None:
    assert passage_texts("I live in Lisbon.") == []
    one_long_sentence = " ".join(["word"] * 40) + "."
    assert passage_texts(one_long_sentence) == []  # a single group: its own vector says it
    cut = passage_texts(ASIDE)
    assert len(cut) == 4
    assert cut[2].startswith("By the way, I volunteered at the Portland Film Festival")
    assert all(len(part.split()) >= 12 for part in cut)
    tail = ASIDE + " Thanks!"
    assert passage_texts(tail)[-1].endswith("four days? Thanks!")  # a short tail joins
    with override_settings(ENGRAM_MEMORY_MAX_PASSAGES=2):
        assert passage_texts(ASIDE) == cut[:2]
    with override_settings(ENGRAM_MEMORY_MAX_PASSAGES=0):
        assert passage_texts(ASIDE) == []


def test_the_search_weighs_a_memory_by_its_best_passage(api: APIClient) -> None:
    memory = _add(api, ASIDE)
    _add(api, "I like watching documentaries about space on rainy weekends at home.")
    stored = _passages(memory["id"])
    assert len(stored) == len(passage_texts(ASIDE))
    # The passages' vectors are the model's vectors of the passages' texts.
    for vector, expected in zip(stored, embed_texts(passage_texts(ASIDE)), strict=True):
        assert _cosine(vector, expected) > 0.9999

    query = embed_query(QUESTION)
    whole = _cosine(embed_texts([ASIDE])[0], query)
    best = max(_cosine(vector, query) for vector in stored)
    assert best > whole + 0.05  # the aside says it far better than the message as a whole

    response = api.post(
        f"{MEMORIES}/search", {"query": QUESTION, "user_id": "alice"}, format="json"
    )
    assert response.status_code == 200, response.content
    hit = next(h for h in response.json()["results"] if h["memory"]["id"] == memory["id"])
    assert hit["parts"]["semantic"] == pytest.approx(best, abs=1e-5)


def test_a_short_memory_has_no_passages_and_keeps_its_own_cosine(api: APIClient) -> None:
    memory = _add(api, "I volunteered at the Portland Film Festival last month.")
    assert _passages(memory["id"]) == []
    response = api.post(
        f"{MEMORIES}/search", {"query": QUESTION, "user_id": "alice"}, format="json"
    )
    hit = response.json()["results"][0]
    whole = _cosine(embed_texts([memory["content"]])[0], embed_query(QUESTION))
    assert hit["parts"]["semantic"] == pytest.approx(whole, abs=1e-5)


def test_passages_follow_an_edit_and_go_with_the_memory(api: APIClient) -> None:
    memory = _add(api, ASIDE)
    assert len(_passages(memory["id"])) == 4
    url = f"{MEMORIES}/{memory['id']}?acting_user_id=alice"
    edited = api.patch(url, {"content": "I volunteered at a film festival."}, format="json")
    assert edited.status_code == 200, edited.content
    assert _passages(memory["id"]) == []  # the old text's passages are gone with it
    longer = ASIDE.replace("Portland", "Seattle") + " I also want a good soup recipe for winter."
    assert api.patch(url, {"content": longer}, format="json").status_code == 200
    stored = _passages(memory["id"])
    assert len(stored) == len(passage_texts(longer))
    for vector, expected in zip(stored, embed_texts(passage_texts(longer)), strict=True):
        assert _cosine(vector, expected) > 0.9999

    assert api.delete(url).status_code == 204
    assert not MemoryPassage.objects.filter(memory_id=memory["id"]).exists()


def test_erasing_the_user_erases_the_passages(api: APIClient) -> None:
    mine = _add(api, ASIDE, user="erin")
    kept = _add(api, ASIDE, user="frank")
    assert api.delete("/api/v1/users/erin").status_code in (200, 202, 204)
    assert not MemoryPassage.objects.filter(memory_id=mine["id"]).exists()
    assert len(_passages(kept["id"])) == 4


def test_another_users_or_tenants_passage_never_answers(
    api: APIClient, other_api: APIClient
) -> None:
    _add(api, ASIDE, user="bob")
    _add(other_api, ASIDE, user="alice")
    _add(api, "I like watching documentaries about space on rainy weekends at home.")
    response = api.post(
        f"{MEMORIES}/search", {"query": QUESTION, "user_id": "alice"}, format="json"
    )
    assert response.status_code == 200
    assert all("Portland" not in h["memory"]["content"] for h in response.json()["results"])


def test_a_long_turn_is_remembered_with_its_passages(
    api: APIClient, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    session = api.post("/api/v1/sessions", {"user_id": "tess", "agent_id": "a"}, format="json")
    session_id = session.json()["id"]
    body = {"user_message": ASIDE, "assistant_response": "Lentil soup it is.", "steps": STEP}
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(f"/api/v1/sessions/{session_id}/turns", body, format="json")
    assert response.status_code == 201, response.content
    memory = Memory.objects.get(user_id="tess", source=MemorySource.CONVERSATION_TURN)
    assert len(_passages(str(memory.pk))) == len(passage_texts(memory.content)) >= 4
