"""An episode per session: a session that stops taking turns leaves an episodic memory
that summarises it, linked to it, refreshed when it grew, gone with it."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from memory_app.models import Memory, MemorySource
from memory_app.services.episodes import session_episode_write
from sessions_app.models import Tenant
from sessions_app.services.sessions import session_archive
from tests.memory_app.window_helpers import loopback_llm, new_session, record

pytestmark = pytest.mark.django_db

TALK = [
    ("We planned the garden: tomatoes along the south fence.", "Good, they need sun."),
    ("And basil next to the tomatoes.", "Basil and tomatoes grow well together."),
    ("The watering schedule is every second evening.", "Every second evening, noted."),
]


def _episodes(session: Any) -> list[Memory]:
    return list(Memory.objects.filter(session_id=session.pk, source=MemorySource.SESSION_EPISODE))


def test_archiving_a_session_leaves_an_episode_of_it(
    tenant: Tenant, api: APIClient, django_capture_on_commit_callbacks: Any
) -> None:
    session = new_session(tenant)
    for user, reply in TALK:
        record(tenant, session, user, reply)
    with django_capture_on_commit_callbacks(execute=True):
        session_archive(session=session)
    (episode,) = _episodes(session)
    assert (episode.type, episode.user_id, episode.agent_id) == ("episodic", "u1", "shop")
    assert episode.content.startswith(
        f"Session of {episode.occurred_at:%Y-%m-%d} with shop (3 turns):"
    )
    assert "tomatoes" in episode.content
    assert episode.structured["turns"] == 3 and episode.structured["method"] == "extractive"
    # Found by a question no single turn answers word for word, from a new session.
    found = api.post(
        "/api/v1/memories/search",
        {"query": "what did we do last time in the garden", "user_id": "u1", "types": ["episodic"]},
        format="json",
    ).json()["results"]
    assert episode.pk in {hit["memory"]["id"] for hit in found} or str(episode.pk) in {
        hit["memory"]["id"] for hit in found
    }
    # Writing it again changes nothing; a session that grew gets a new version.
    assert session_episode_write(session_id=session.pk) == "unchanged"
    assert len(_episodes(session)) == 1


def test_an_episode_is_refreshed_when_the_session_grew_and_goes_with_it(
    tenant: Tenant, api: APIClient
) -> None:
    session = new_session(tenant)
    record(tenant, session, *TALK[0])
    assert session_episode_write(session_id=session.pk) == "created"
    record(tenant, session, *TALK[1])
    assert session_episode_write(session_id=session.pk) == "updated"
    (episode,) = _episodes(session)
    assert episode.version == 2 and episode.structured["turns"] == 2
    assert api.delete(f"/api/v1/sessions/{session.pk}").status_code == 204
    assert _episodes(session) == []


def test_a_session_without_conversation_has_no_episode(tenant: Tenant) -> None:
    session = new_session(tenant)
    assert session_episode_write(session_id=session.pk) == "empty"
    assert _episodes(session) == []


def test_with_an_llm_the_episode_is_abstractive(tenant: Tenant, settings: Any) -> None:
    session = new_session(tenant)
    for user, reply in TALK:
        record(tenant, session, user, reply)
    with loopback_llm("The user planned a vegetable garden with tomatoes and basil.") as llm:
        settings.ENGRAM_LLM_URL = llm.url
        assert session_episode_write(session_id=session.pk) == "created"
    (episode,) = _episodes(session)
    assert episode.structured["method"] == "llm"
    assert episode.content.endswith("The user planned a vegetable garden with tomatoes and basil.")
