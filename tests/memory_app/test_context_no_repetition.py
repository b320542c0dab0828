"""A context holds each thing once: a turn it shows is not repeated by a milestone or a
summary line that only restates it, nor shown a second time from another source."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from memory_app.selectors.context.candidate import Candidate, unrepeated
from memory_app.services.compaction import session_compact
from sessions_app.models import Tenant
from tests.memory_app.trip_conversation import USER_MESSAGES, assistant_reply
from tests.memory_app.window_helpers import new_session, record

pytestmark = pytest.mark.django_db

ALLERGY = "allergic to peanuts"  # said in turn 4 of the trip, and only there


def _context(api: APIClient, session_id: Any, **params: Any) -> dict[str, Any]:
    response = api.get(f"/api/v1/sessions/{session_id}/context", params)
    assert response.status_code == 200, response.content
    return response.json()


def _trip(tenant: Tenant, capture: Any) -> Any:
    """The trip conversation, each turn remembered after its commit (compacted as due)."""
    session = new_session(tenant)
    for number, message in enumerate(USER_MESSAGES, 1):
        with capture(execute=True):
            record(tenant, session, message, assistant_reply(number))
    return session


def test_a_recalled_turn_is_not_repeated_by_its_milestone(
    tenant: Tenant, api: APIClient, django_capture_on_commit_callbacks: Any
) -> None:
    session = _trip(tenant, django_capture_on_commit_callbacks)
    session_compact(session_id=session.pk)
    body = _context(api, session.pk, query="Is anyone allergic to peanuts?", budget=2000)
    text = "\n".join(m["content"] for m in body["messages"])
    assert text.count(ALLERGY) == 1, text
    assert "recalled:4" in {row["key"] for row in body["included"]}, text
    duplicates = [row for row in body["excluded"] if row["reason"] == "duplicate"]
    assert any(row["kind"] == "milestone" for row in duplicates), body["excluded"]
    keys = [row["key"] for row in body["included"]]
    assert len(keys) == len(set(keys))


def test_a_summary_loses_the_lines_of_the_turns_shown_whole() -> None:
    """A summary line restating a turn the context shows whole goes; the summary's label
    stays on its first line left; a summary of shown turns alone goes altogether, and so
    does a line showing a turn already shown in part."""
    summary = Candidate(
        key="summary:1",
        kind="summary",
        section="summaries",
        text="[turns 1-5] [t2] U: Our whole budget is 3600 euros.\n"
        "[t4] U: Tomas is allergic to peanuts.\n[t5] U: Cabins under 150 euros a night.",
        role="system",
        at=None,
        restates=("s:2", "s:4", "s:5"),
    )
    kept = unrepeated(summary, shown={"s:2", "s:4"}, seen={"s:2", "s:4"})
    assert kept is not None and kept.restates == ("s:5",)
    assert kept.text == "[turns 1-5] [t5] U: Cabins under 150 euros a night."
    assert unrepeated(summary, shown={"s:2", "s:4", "s:5"}, seen=set()) is None
    assert unrepeated(summary, shown=set(), seen={"s:2"}) is summary  # shown in part only
    past = Candidate("past:s:4", "past_turn", "past", "[…] user: …", "system", None, shows="s:4")
    assert unrepeated(past, shown=set(), seen={"s:4"}) is None
