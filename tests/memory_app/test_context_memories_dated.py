"""The long-term memories of a context: found for the question asked at `as_of`, each
labelled with its date, and let through the similarity floors when the search relates
them to the question by its words or the time it names, or they state what it asks for."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone
from rest_framework.test import APIClient

from memory_app.services.memories import MemoryDraft, memory_add
from memory_app.timeq import resolve_time_phrases
from sessions_app.models import Tenant
from tests.memory_app.window_helpers import new_session

pytestmark = pytest.mark.django_db

# Wednesday 25 November 2026: "last Saturday" is the 21st.
AS_OF = "2026-11-25T12:00:00Z"
HIKE = "Went hiking in Gerês, 20 km with Rui."


def _add(tenant: Tenant, content: str, when: datetime, kind: str = "episodic") -> Any:
    draft = MemoryDraft(user_id="u1", type=kind, content=content, occurred_at=when)
    return memory_add(tenant=tenant, draft=draft).memory


def _context(api: APIClient, session_id: Any, query: str, **params: Any) -> dict[str, Any]:
    response = api.get(
        f"/api/v1/sessions/{session_id}/context", {"query": query, "budget": 1500, **params}
    )
    assert response.status_code == 200, response.content
    return response.json()


def _hike_and_plant(tenant: Tenant) -> tuple[Any, Any, Any]:
    """Last Saturday's hike, October's plant, and a new session of their user."""
    hike = _add(tenant, HIKE, datetime(2026, 11, 21, 15, tzinfo=UTC))
    plant = _add(
        tenant, "Picked up a snake plant at the market.", datetime(2026, 10, 18, 18, tzinfo=UTC)
    )
    return hike, plant, new_session(tenant)


def test_a_question_only_about_a_time_weighs_memories_by_their_time(
    tenant: Tenant, api: APIClient
) -> None:
    hike, plant, session = _hike_and_plant(tenant)

    body = _context(api, session.pk, "What did I do last Saturday?", as_of=AS_OF)

    side, entry = _entry(body, hike)
    assert side == "included", entry
    # The question has no subject but its time: the memory's relatedness is its time.
    assert entry["score_parts"]["semantic"] == 1.0
    side, entry = _entry(body, plant)
    assert side == "excluded" and entry["reason"] in ("evicted_below_similarity", "not_relevant")


def _memories_message(body: dict[str, Any]) -> str:
    found = [m["content"] for m in body["messages"] if m["content"].startswith("Relevant long")]
    return found[0] if found else ""


def _entry(body: dict[str, Any], memory: Any) -> tuple[str, dict[str, Any]]:
    """("included" or "excluded", the breakdown's entry) of a memory."""
    key = f"memory:{memory.pk}"
    for side in ("included", "excluded"):
        for entry in body[side]:
            if entry["key"] == key:
                return side, entry
    raise AssertionError(f"{key} is not in the breakdown")


def test_a_memory_of_the_time_the_question_names_comes_in_whatever_its_cosine(
    tenant: Tenant, api: APIClient
) -> None:
    hike, plant, session = _hike_and_plant(tenant)

    body = _context(api, session.pk, "Which boots did I wear last Saturday?", as_of=AS_OF)

    side, entry = _entry(body, hike)
    assert side == "included", entry
    # Its cosine alone would have evicted it: the time the question names lets it in.
    assert entry["score_parts"]["semantic"] < settings.ENGRAM_CONTEXT_SIMILARITY_FLOOR
    assert "[2026-11-21 15:00] Went hiking in Gerês" in _memories_message(body)
    # A memory of another time that shares no word with the question still must pass
    # the floors on its cosine.
    side, entry = _entry(body, plant)
    assert side == "excluded" and entry["reason"] in ("evicted_below_similarity", "not_relevant")


def test_without_as_of_the_question_is_read_against_now(tenant: Tenant, api: APIClient) -> None:
    saturday = resolve_time_phrases("last Saturday", timezone.now())
    assert saturday is not None and saturday.start is not None
    hike = _add(tenant, HIKE, saturday.start + timedelta(hours=15))
    session = new_session(tenant)

    assert _entry(_context(api, session.pk, "What did I do last Saturday?"), hike)[0] == "included"
    # Asked a month later, "last Saturday" is another day, and nothing else relates them.
    later = (timezone.now() + timedelta(days=30)).isoformat()
    body = _context(api, session.pk, "What did I do last Saturday?", as_of=later)
    assert _entry(body, hike)[0] == "excluded"


GARDEN = (
    "We spent the whole afternoon planning the garden: tomatoes along the south fence, "
    "basil and parsley in the raised bed, a row of dwarf beans behind them, and the compost "
    "bin moved next to the shed so the path stays clear. The hose reel needs a new washer, "
    "the wheelbarrow tyre is flat again, and the shed padlock is the one with code 4471. "
    "Next weekend we sow the carrots and put netting over the strawberries."
)


def test_a_memory_sharing_a_word_with_the_question_passes_the_floors(
    tenant: Tenant, api: APIClient
) -> None:
    garden = _add(tenant, GARDEN, datetime(2026, 11, 2, 9, tzinfo=UTC))
    session = new_session(tenant)

    body = _context(api, session.pk, "4471", as_of=AS_OF)

    side, entry = _entry(body, garden)
    assert side == "included", entry
    # A detail inside a long text: the vector says little of it, the word does.
    assert entry["score_parts"]["semantic"] < settings.ENGRAM_CONTEXT_SIMILARITY_FLOOR


def test_a_superseded_memory_is_labelled_until_its_successor(
    tenant: Tenant, api: APIClient
) -> None:
    lisbon = _add(tenant, "I moved to Lisbon.", datetime(2026, 9, 10, 10, tzinfo=UTC), "fact")
    porto = _add(tenant, "I moved to Porto.", datetime(2026, 11, 2, 10, tzinfo=UTC), "fact")
    lisbon.refresh_from_db()
    assert lisbon.superseded_by_id == porto.pk
    session = new_session(tenant)

    text = _memories_message(_context(api, session.pk, "Where do I live now?", as_of=AS_OF))
    assert "[2026-11-02 10:00] I moved to Porto." in text
    assert "[2026-09-10 10:00, until 2026-11-02 10:00] I moved to Lisbon." in text
    # Asked while Lisbon still held, it carries no end.
    text = _memories_message(
        _context(api, session.pk, "Where do I live?", as_of="2026-10-01T12:00:00Z")
    )
    assert "[2026-09-10 10:00] I moved to Lisbon." in text
    # The move to Porto had not happened then: it is not in that context.
    assert "Porto" not in text


def test_a_memory_without_occurred_at_is_dated_when_it_was_noted(
    tenant: Tenant, api: APIClient
) -> None:
    draft = MemoryDraft(user_id="u1", type="preference", content="I prefer aisle seats.")
    memory = memory_add(tenant=tenant, draft=draft).memory
    session = new_session(tenant)

    text = _memories_message(_context(api, session.pk, "Which seat do I prefer?"))
    assert f"[{memory.created_at:%Y-%m-%d %H:%M}] I prefer aisle seats." in text


def test_a_context_asked_at_the_calendar_s_end_answers(tenant: Tenant, api: APIClient) -> None:
    hike = _add(tenant, HIKE, datetime(2026, 11, 21, 15, tzinfo=UTC))
    session = new_session(tenant)

    body = _context(api, session.pk, "Where did I go hiking?", as_of="9999-12-31T23:59:59-12:00")
    assert "Went hiking in Gerês" in _memories_message(body), _entry(body, hike)


def test_a_memory_s_recency_is_its_own_time_not_its_last_access(
    tenant: Tenant, api: APIClient
) -> None:
    year_ago = timezone.now() - timedelta(days=365)
    hike = _add(tenant, HIKE, year_ago)
    draft = MemoryDraft(user_id="u1", type="preference", content="I prefer hiking boots.")
    boots = memory_add(tenant=tenant, draft=draft).memory
    # Found (and so accessed) a moment ago, as every searched memory is.
    type(hike).objects.filter(pk=hike.pk).update(last_accessed_at=timezone.now())
    session = new_session(tenant)

    body = _context(api, session.pk, "Where did I go hiking?")

    # A year-old hike is as old as a year-old turn, however lately it was read…
    assert _entry(body, hike)[1]["score_parts"]["recency"] < 0.01
    # …and a memory noted now (no `occurred_at`) is new.
    assert _entry(body, boots)[1]["score_parts"]["recency"] > 0.9


def test_a_long_memory_shows_the_passage_that_answers(tenant: Tenant, api: APIClient) -> None:
    days = [
        f"On day {i} we weeded the {crop} beds and watered the seedlings."
        for i, crop in enumerate(["carrot", "onion", "bean", "pea", "leek", "kale"] * 8)
    ]
    notes = " ".join([*days, "The shed padlock is the one with code 4471."])
    memory = _add(tenant, notes, datetime(2026, 11, 2, 9, tzinfo=UTC))
    session = new_session(tenant)

    body = _context(api, session.pk, "What is the code of the shed padlock?", as_of=AS_OF)

    assert _entry(body, memory)[0] == "included"
    text = _memories_message(body)
    # The garden notes run past a line: the line is the passage with the code, not
    # their beginning.
    assert "code 4471" in text and "On day 0 we weeded" not in text


def test_a_memory_is_labelled_in_the_offset_of_the_question(tenant: Tenant, api: APIClient) -> None:
    _add(tenant, HIKE, datetime(2026, 11, 21, 22, 30, tzinfo=UTC))
    session = new_session(tenant)

    body = _context(api, session.pk, "Where did I go hiking?", as_of="2026-11-25T12:00:00+05:30")
    # 22:30 UTC is 04:00 the next day at +05:30.
    assert "[2026-11-22 04:00] Went hiking in Gerês" in _memories_message(body)


def test_a_memory_stating_what_the_question_asks_for_passes_the_floors(
    tenant: Tenant, api: APIClient
) -> None:
    # "Where do I live?" shares no word with the move, and its cosine to the whole line is
    # under the floor; the line states the user's home, which the question asks for.
    moved_on = datetime(2026, 11, 2, 10, tzinfo=UTC)
    moved = _add(tenant, "I moved to Porto last week for the new job.", moved_on, "fact")
    employer = _add(
        tenant, "I work at Acme Robotics.", datetime(2026, 11, 3, 10, tzinfo=UTC), "fact"
    )
    assert (moved.subject, employer.subject) == ("home", "employer")
    session = new_session(tenant)

    body = _context(api, session.pk, "Where do I live?", as_of=AS_OF)

    side, entry = _entry(body, moved)
    assert side == "included", entry
    assert entry["score_parts"]["semantic"] < settings.ENGRAM_CONTEXT_SIMILARITY_FLOOR
    assert "Porto last week" in _memories_message(body)
    # A memory of another subject is still judged by its cosine alone.
    side, entry = _entry(body, employer)
    assert side == "excluded" and entry["reason"] == "evicted_below_similarity", entry
