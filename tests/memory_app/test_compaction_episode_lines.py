"""A compacted span's episodic memory says what the span held: its summary field is no
label, so its line in the context is the passage of the span's summary that answers the
query; the span's label is `structured.span_label`. Episodes stored with the label as
their summary are moved so by migration 0008."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from memory_app.models import Memory
from memory_app.selectors.context.candidates.memories import memory_candidates
from memory_app.selectors.memories import Actor
from sessions_app.models import ChatSession, Tenant
from tests.memory_app.trip_conversation import USER_MESSAGES, assistant_reply
from tests.memory_app.window_helpers import new_session, record

BEFORE = ("memory_app", "0007_compaction_episodes_dated_by_their_turns")
AFTER = ("memory_app", "0008_compaction_episodes_summary_is_no_label")


def _trip_session(tenant: Tenant, capture: Any) -> ChatSession:
    """The trip conversation recorded turn by turn, compaction and the extraction of its
    episodes running after each commit as in production."""
    session = new_session(tenant)
    for number, message in enumerate(USER_MESSAGES, start=1):
        with capture(execute=True):
            record(tenant, session, message, assistant_reply(number))
    return session


def _episodes(tenant: Tenant) -> Any:
    return Memory.objects.filter(
        tenant=tenant, source="system_generated", tags__contains=["compaction"]
    ).order_by("structured__extracted_from__first_turn")


@pytest.mark.django_db
def test_an_episode_line_in_the_context_holds_the_span_s_facts(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    session = _trip_session(tenant, django_capture_on_commit_callbacks)
    first = _episodes(tenant).first()
    assert first is not None
    span = first.structured["extracted_from"]
    assert first.summary == ""
    assert first.structured["span_label"] == (
        f"Turns {span['first_turn']}-{span['last_turn']} of a session with shop"
    )
    found = memory_candidates(
        tenant, Actor(user_id=session.user_id), "Is anyone allergic to something?", 12,
        timezone.now(),
    )  # fmt: skip
    line = next(c.text for c in found.candidates if c.key == f"memory:{first.pk}")
    assert "Turns " not in line
    assert "Tomas is allergic to peanuts" in line


@pytest.mark.django_db(transaction=True)
def test_migration_moves_an_episode_s_label_out_of_its_summary(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    session = new_session(tenant)
    for number, message in enumerate(USER_MESSAGES[:11], start=1):
        with django_capture_on_commit_callbacks(execute=True):
            record(tenant, session, message, assistant_reply(number))
    episode = _episodes(tenant).get()
    label = episode.structured["span_label"]
    _migrate(BEFORE)
    # As stored before: the label was the summary.
    legacy = {k: v for k, v in episode.structured.items() if k != "span_label"}
    Memory.objects.filter(pk=episode.pk).update(summary=label, structured=legacy)

    _migrate(AFTER)

    episode.refresh_from_db()
    assert episode.summary == ""
    assert episode.structured == {**legacy, "span_label": label}
    lexical_hit = Memory.objects.filter(pk=episode.pk, search_vector="session").exists()
    assert not lexical_hit  # the label's words left the search vector with it


def _migrate(target: tuple[str, str]) -> None:
    MigrationExecutor(connection).migrate([target])


@pytest.mark.django_db
def test_a_session_s_own_episodes_are_not_its_context_memories(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    session = _trip_session(tenant, django_capture_on_commit_callbacks)
    episodes = {f"memory:{pk}" for pk in _episodes(tenant).values_list("pk", flat=True)}
    assert episodes
    query = "Is anyone allergic to something?"
    actor = Actor(user_id=session.user_id)
    # Another session of the user is given them; the session itself has its summaries.
    elsewhere = memory_candidates(tenant, actor, query, 12, timezone.now())
    assert episodes & {c.key for c in elsewhere.candidates}
    own = memory_candidates(tenant, actor, query, 12, timezone.now(), session.pk)
    assert not episodes & {c.key for c in own.candidates}


@pytest.mark.django_db
def test_an_episode_keeps_the_parts_its_span_named(
    tenant: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    session = new_session(tenant)
    messages = ["Please add the charger part AC-4410B to my order.", *USER_MESSAGES[1:11]]
    for number, message in enumerate(messages, start=1):
        with django_capture_on_commit_callbacks(execute=True):
            record(tenant, session, message, assistant_reply(number))
    episode = _episodes(tenant).get()
    assert [item["mpn"] for item in episode.structured["items"]] == ["AC-4410B"]
