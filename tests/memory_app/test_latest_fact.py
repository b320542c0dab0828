"""The latest fact wins for questions about the current state; the older stays findable.

Through HTTP with the real embedder and PostgreSQL: a user's later statement of the same
subject ("I live in Porto", later "I moved to Lisbon") supersedes the earlier one (its
`superseded_by`, `valid_to`, a `supersedes` edge), a "now" question ranks the newer
first and still returns the older with its dates, and a `valid_at` search in the past
finds the older only."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.memory_app.test_memories_api import MEMORIES, add, search
from tests.memory_app.test_memory_types_metadata_relations import AS, created

pytestmark = pytest.mark.django_db

PORTO_DAY = "2024-03-01T10:00:00Z"
LISBON_DAY = "2025-06-01T10:00:00Z"


def get(api: APIClient, memory_id: str) -> dict[str, Any]:
    response = api.get(f"{MEMORIES}/{memory_id}{AS}")
    assert response.status_code == 200, response.content
    return response.json()  # type: ignore[no-any-return]


def ids(results: list[dict[str, Any]]) -> list[str]:
    return [hit["memory"]["id"] for hit in results]


def background(api: APIClient) -> None:
    """Other facts of the same user, so that the ranking has something to rank."""
    for content in (
        "My favourite colour is green",
        "I work at Acme as a data engineer",
        "I have a cat named Biscuit",
        "I prefer trains to planes for short trips",
    ):
        created(add(api, content=content, type="fact"))


def porto_then_lisbon(api: APIClient) -> tuple[dict[str, Any], dict[str, Any]]:
    background(api)
    porto = created(add(api, content="I live in Porto", type="fact", occurred_at=PORTO_DAY))
    lisbon = created(add(api, content="I moved to Lisbon", type="profile", occurred_at=LISBON_DAY))
    return get(api, porto["id"]), get(api, lisbon["id"])


def test_a_later_statement_of_the_same_subject_supersedes_the_earlier(api: APIClient) -> None:
    porto, lisbon = porto_then_lisbon(api)
    assert porto["subject"] == lisbon["subject"] == "home"
    assert porto["superseded_by"] == lisbon["id"]
    assert porto["valid_to"] == "2025-06-01T10:00:00Z"  # where the newer begins
    assert lisbon["superseded_by"] is None and lisbon["valid_to"] is None
    assert lisbon["valid_from"] == "2025-06-01T10:00:00Z"
    assert lisbon["relations"] == [{"type": "supersedes", "target_id": porto["id"]}]
    edges = api.get(f"{MEMORIES}/{lisbon['id']}/relations{AS}").json()["relations"]
    assert [(e["type"], e["target_id"], e["reason"]) for e in edges] == [
        ("supersedes", porto["id"], "contradicted")
    ]
    # Not a version of either: the text of both is what was said.
    assert porto["version"] == 1 and porto["content"] == "I live in Porto"


def test_now_question_ranks_the_newer_first_and_keeps_the_older(api: APIClient) -> None:
    porto, lisbon = porto_then_lisbon(api)
    results = search(api, "where do I live now?", user_id="alice")
    assert ids(results)[0] == lisbon["id"], [hit["memory"]["content"] for hit in results]
    older = next(hit for hit in results if hit["memory"]["id"] == porto["id"])
    assert older["memory"]["superseded_by"] == lisbon["id"]
    assert older["memory"]["occurred_at"] == "2024-03-01T10:00:00Z"
    assert older["memory"]["valid_to"] == "2025-06-01T10:00:00Z"
    assert older["parts"]["superseded"] == 1.0 and results[0]["parts"]["superseded"] == 0.0

    # The older matches "Porto" word for word, yet a "still" question puts the newer first.
    still = search(api, "do I still live in Porto?", user_id="alice")
    assert ids(still).index(lisbon["id"]) < ids(still).index(porto["id"])

    # A question that does not ask about now ranks on relevance alone: no part, no cut.
    plain = search(api, "Porto", user_id="alice")
    assert ids(plain)[0] == porto["id"] and plain[0]["parts"]["superseded"] == 0.0


@pytest.mark.parametrize("query", ["where do I live?", "Where am I living?", "what's my home city"])
def test_a_present_tense_question_ranks_the_newer_first(api: APIClient, query: str) -> None:
    porto, lisbon = porto_then_lisbon(api)
    results = search(api, query, user_id="alice")
    assert ids(results)[0] == lisbon["id"], [hit["memory"]["content"] for hit in results]
    older = next(hit for hit in results if hit["memory"]["id"] == porto["id"])
    assert older["parts"]["superseded"] == 1.0


@pytest.mark.parametrize("query", ["where did I live?", "where did I use to live?"])
def test_a_past_tense_question_finds_the_older_unpenalised(api: APIClient, query: str) -> None:
    porto, _ = porto_then_lisbon(api)
    results = search(api, query, user_id="alice")
    older = next(hit for hit in results if hit["memory"]["id"] == porto["id"])
    assert all(hit["parts"]["superseded"] == 0.0 for hit in results)
    assert older["memory"]["superseded_by"] is not None


def test_before_the_move_the_older_home_ranks_first_and_the_move_is_marked(
    api: APIClient,
) -> None:
    # "before I moved" names the instant before the move (dated by "I moved to Lisbon"):
    # Porto held then, the move did not.
    porto, lisbon = porto_then_lisbon(api)
    results = search(api, "where did I live before I moved?", user_id="alice")
    assert ids(results)[0] == porto["id"], [hit["memory"]["content"] for hit in results]
    parts = {hit["memory"]["id"]: hit["parts"] for hit in results}
    assert (parts[porto["id"]]["superseded"], parts[lisbon["id"]]["superseded"]) == (0.0, 1.0)


def test_valid_at_finds_what_held_then(api: APIClient) -> None:
    porto, lisbon = porto_then_lisbon(api)
    then = search(api, "where do I live?", user_id="alice", valid_at="2024-12-01T00:00:00Z")
    assert porto["id"] in ids(then) and lisbon["id"] not in ids(then)
    # The background facts have open intervals: they hold at any time.
    assert len(then) == 5
    now = search(api, "where do I live?", user_id="alice", valid_at="2026-01-01T00:00:00Z")
    assert lisbon["id"] in ids(now) and porto["id"] not in ids(now)
    # The end is exclusive: at the very instant of the move, Lisbon holds, Porto not.
    at_move = search(api, "where do I live?", user_id="alice", valid_at=LISBON_DAY)
    assert lisbon["id"] in ids(at_move) and porto["id"] not in ids(at_move)


def test_a_valid_at_search_weighs_the_state_at_that_time_not_now(api: APIClient) -> None:
    porto, lisbon = porto_then_lisbon(api)
    # "Where do I live?" asks about the current state; asked of a time the caller names
    # with valid_at, the current state is that time's: Porto held then, so it is not
    # weighed as superseded, and it ranks first as the home of then.
    then = search(api, "where do I live?", user_id="alice", valid_at="2024-12-01T00:00:00Z")
    assert ids(then)[0] == porto["id"], [hit["memory"]["content"] for hit in then]
    assert then[0]["parts"]["superseded"] == 0.0
    unfiltered = search(api, "where do I live?", user_id="alice")
    parts = {hit["memory"]["id"]: hit["parts"]["superseded"] for hit in unfiltered}
    assert (parts[porto["id"]], parts[lisbon["id"]]) == (1.0, 0.0)


def test_an_earlier_fact_told_late_is_born_superseded(api: APIClient) -> None:
    lisbon = created(add(api, content="I live in Lisbon", type="fact", occurred_at=LISBON_DAY))
    porto = created(add(api, content="I live in Porto", type="fact", occurred_at=PORTO_DAY))
    porto, lisbon = get(api, porto["id"]), get(api, lisbon["id"])
    assert porto["superseded_by"] == lisbon["id"] and lisbon["superseded_by"] is None
    assert porto["valid_to"] == LISBON_DAY


def test_same_subject_another_value_is_not_merged_even_when_close(api: APIClient) -> None:
    porto = created(add(api, content="I live in Porto", type="fact"))
    second = add(api, content="I live in Lisbon", type="fact")
    assert second.status_code == 201 and second.json()["action"] == "created"
    assert get(api, porto["id"])["superseded_by"] == second.json()["memory"]["id"]


def test_the_same_value_again_supersedes_nothing(api: APIClient) -> None:
    first = created(add(api, content="I live in Lisbon", type="fact"))
    again = add(api, content="I am currently living in Lisbon, near the river", type="fact")
    assert again.status_code in (200, 201)
    assert get(api, first["id"])["superseded_by"] is None
    assert get(api, again.json()["memory"]["id"])["superseded_by"] is None


def test_what_does_not_state_a_fact_supersedes_nothing(api: APIClient) -> None:
    lisbon = created(add(api, content="I live in Lisbon", type="fact"))
    # A turn of a conversation is what was said, not what holds.
    turn = add(api, content="I live in Madrid", type="episodic", source="conversation_turn")
    assert turn.status_code == 201
    # Another user's home is theirs.
    assert add(api, content="I live in Berlin", type="fact", user_id="bob").status_code == 201
    # Another subject of the same user.
    created(add(api, content="I work at Globex", type="fact"))
    assert get(api, lisbon["id"])["superseded_by"] is None
    assert turn.json()["memory"]["subject"] == ""


def test_a_named_subject_makes_preferences_contradict(api: APIClient) -> None:
    aisle = created(add(api, content="I prefer aisle seats", subject="Seat"))
    window = created(add(api, content="I prefer window seats", subject="seat"))
    assert get(api, aisle["id"])["superseded_by"] == window["id"]
    assert window["subject"] == "seat"


def test_a_callers_supersedes_edge_supersedes_and_removing_it_restores(api: APIClient) -> None:
    porto, lisbon = porto_then_lisbon(api)
    edge = api.get(f"{MEMORIES}/{lisbon['id']}/relations{AS}").json()["relations"][0]
    removed = api.delete(f"{MEMORIES}/{lisbon['id']}/relations/{edge['id']}{AS}")
    assert removed.status_code == 204
    restored = get(api, porto["id"])
    assert restored["superseded_by"] is None and restored["valid_to"] is None
    # A caller says it again, by an edge of its own.
    made = api.post(f"{MEMORIES}/{lisbon['id']}/relations{AS}",
                    {"type": "supersedes", "target_id": porto["id"]}, format="json")  # fmt: skip
    assert made.status_code == 201 and made.json()["reason"] == ""
    assert get(api, porto["id"])["superseded_by"] == lisbon["id"]


def test_deleting_the_newer_makes_the_older_current(api: APIClient) -> None:
    porto, lisbon = porto_then_lisbon(api)
    assert api.delete(f"{MEMORIES}/{lisbon['id']}{AS}").status_code == 204
    restored = get(api, porto["id"])
    # The end that superseding gave it goes with the pointer.
    assert restored["superseded_by"] is None and restored["valid_to"] is None
    results = search(api, "where do I live now?", user_id="alice")
    assert ids(results)[0] == porto["id"] and results[0]["parts"]["superseded"] == 0.0


def test_a_now_question_asked_before_the_move_prefers_what_held_then(api: APIClient) -> None:
    porto, lisbon = porto_then_lisbon(api)
    results = search(api, "where do I live now?", user_id="alice", as_of="2024-12-01T00:00:00Z")
    parts = {hit["memory"]["id"]: hit["parts"]["superseded"] for hit in results}
    # Porto held until the move; Lisbon had not begun.
    assert ids(results)[0] == porto["id"], [hit["memory"]["content"] for hit in results]
    assert (parts[porto["id"]], parts[lisbon["id"]]) == (0.0, 1.0)


def test_a_successor_not_yet_begun_leaves_the_reopened_older_current(api: APIClient) -> None:
    porto, lisbon = porto_then_lisbon(api)
    later = {"valid_from": "2099-01-01T00:00:00Z"}
    assert api.patch(f"{MEMORIES}/{lisbon['id']}{AS}", later, format="json").status_code == 200
    reopened = {"valid_to": None}
    assert api.patch(f"{MEMORIES}/{porto['id']}{AS}", reopened, format="json").status_code == 200
    results = search(api, "where do I live now?", user_id="alice")
    parts = {hit["memory"]["id"]: hit["parts"]["superseded"] for hit in results}
    assert ids(results)[0] == porto["id"], [hit["memory"]["content"] for hit in results]
    assert (parts[porto["id"]], parts[lisbon["id"]]) == (0.0, 1.0)


@pytest.mark.parametrize("thread_key", ["", "chat-7"])
def test_one_bulk_call_resolves_its_own_items_in_order(api: APIClient, thread_key: str) -> None:
    items = [
        {"user_id": "alice", "type": "fact", "content": text, "thread_key": thread_key}
        for text in ("I live in Porto", "I moved to Lisbon")
    ]
    response = api.post(f"{MEMORIES}/bulk", items, format="json")
    assert response.status_code == 200, response.content
    porto_id, lisbon_id = (item["memory_id"] for item in response.json()["results"])
    porto, lisbon = get(api, porto_id), get(api, lisbon_id)
    assert porto["superseded_by"] == lisbon_id and lisbon["superseded_by"] is None


def test_a_statement_negating_a_preference_is_its_own_memory_and_supersedes_it(
    api: APIClient,
) -> None:
    aisle = created(add(api, content="I prefer aisle seats on flights.", tags=["travel"]))
    negated = add(api, content="I do not prefer aisle seats on flights", tags=["seating"])
    assert negated.status_code == 201 and negated.json()["action"] == "created", negated.json()
    newer = negated.json()["memory"]
    assert newer["id"] != aisle["id"] and newer["tags"] == ["seating"]
    older = get(api, aisle["id"])
    assert older["content"] == "I prefer aisle seats on flights."
    assert older["version"] == 1 and older["tags"] == ["travel"]
    assert older["superseded_by"] == newer["id"]
    # Said the other way round again, the positive is once more its own, current memory.
    again = add(api, content="I prefer aisle seats on flights")
    assert again.json()["action"] == "created"
    assert get(api, newer["id"])["superseded_by"] == again.json()["memory"]["id"]
    # A negation of a memory of a type without supersession is still its own memory.
    rule = created(add(api, type="procedural", content="Confirm the seat before booking"))
    reverse = add(api, type="procedural", content="Do not confirm the seat before booking")
    assert reverse.json()["action"] == "created"
    assert get(api, rule["id"])["superseded_by"] is None
