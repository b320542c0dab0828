"""Importing past conversations: archived sessions whose turns keep their real time,
idempotent per conversation, whole or not at all, and remembered for their user."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from memory_app.models import Memory, MemorySource
from sessions_app.models import ChatSession, ChatTurn

pytestmark = pytest.mark.django_db

URL = "/api/v1/conversations/import"


def _conversation(conversation_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "conversation_id": conversation_id,
        "user_id": "ana",
        "agent_id": "chat",
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {
                "role": "user",
                "content": "I just adopted a beagle called Pretzel.",
                "timestamp": "2022-03-14T09:00:00Z",
            },
            {"role": "assistant", "content": "Pretzel is a great name!"},
            {
                "role": "user",
                "content": "Any tips for crate training?",
                "timestamp": "2022-03-14T09:05:00+01:00",
            },
            {
                "role": "assistant",
                "content": "Start with short periods.",
                "timestamp": "2022-03-14T09:06:00+01:00",
            },
            {"role": "tool", "content": '{"ok": true}'},
        ],
        **extra,
    }


def test_a_conversation_becomes_an_archived_session_with_dated_turns(
    api: APIClient, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(URL, {"conversations": [_conversation("c-1")]}, format="json")
    assert response.status_code == 200, response.content
    (result,) = response.json()["results"]
    assert (result["status"], result["turns"], result["conversation_id"]) == (201, 2, "c-1")
    session = ChatSession.objects.get(pk=result["session_id"])
    assert (session.status, session.external_session_id, session.user_id) == (
        "archived",
        "c-1",
        "ana",
    )
    turns = list(ChatTurn.objects.filter(session=session).order_by("turn_number"))
    assert [t.user_message for t in turns] == [
        "I just adopted a beagle called Pretzel.",
        "Any tips for crate training?",
    ]
    assert turns[0].assistant_response == "Pretzel is a great name!"
    assert turns[0].occurred_at.isoformat() == "2022-03-14T09:00:00+00:00"
    assert turns[1].occurred_at.isoformat() == "2022-03-14T08:05:00+00:00"
    # Remembered for the user with the turns' own time, and recalled from a new session.
    memories = Memory.objects.filter(session_id=session.pk, source=MemorySource.CONVERSATION_TURN)
    assert sorted(m.occurred_at.year for m in memories) == [2022, 2022]
    new = api.post("/api/v1/sessions", {"user_id": "ana", "agent_id": "chat"}, format="json")
    context = api.get(
        f"/api/v1/sessions/{new.json()['id']}/context", {"query": "What is my dog called?"}
    ).json()
    text = "\n".join(m["content"] for m in context["messages"])
    assert "[2022-03-14 09:00" in text and "Pretzel" in text


def test_importing_again_writes_nothing(api: APIClient) -> None:
    first = api.post(URL, {"conversations": [_conversation("c-1")]}, format="json").json()
    again = api.post(URL, {"conversations": [_conversation("c-1")]}, format="json").json()
    assert again["results"][0]["status"] == 200
    assert again["results"][0]["session_id"] == first["results"][0]["session_id"]
    assert ChatSession.objects.filter(external_session_id="c-1").count() == 1
    assert ChatTurn.objects.filter(session_id=first["results"][0]["session_id"]).count() == 2


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"messages": []}, "messages"),
        ({"user_id": "   "}, "user_id"),
        ({"messages": [{"role": "wizard", "content": "hi"}]}, "messages.0.role"),
        ({"messages": [{"role": "user", "content": 5}]}, "messages.0.content"),
        (
            {"messages": [{"role": "user", "content": "hi", "timestamp": "soon"}]},
            "messages.0.timestamp",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "hi", "timestamp": "2021-01-01T00:00:00Z"},
                    {"role": "assistant", "content": "yo", "timestamp": "2999-01-01T00:00:00Z"},
                ]
            },
            "messages.1.timestamp",
        ),
        ({"started_at": "2999-01-01T00:00:00Z"}, "started_at"),
        ({"conversation_id": "c" * 256}, "conversation_id"),
    ],
)
def test_a_bad_conversation_is_refused_alone_and_writes_nothing(
    api: APIClient, change: dict[str, Any], field: str
) -> None:
    bad = _conversation("bad") | change
    response = api.post(URL, {"conversations": [bad, _conversation("good")]}, format="json")
    assert response.status_code == 200, response.content
    refused, imported = response.json()["results"]
    assert refused["status"] == 400 and imported["status"] == 201
    assert field in refused["error"]["fields"], refused["error"]
    assert not ChatSession.objects.filter(external_session_id="bad").exists()


@pytest.mark.parametrize(
    "body", [[], {"conversations": []}, {"conversations": "x"}, {"conversations": [{}], "x": 1}]
)
def test_a_malformed_request_is_a_400(api: APIClient, body: Any) -> None:
    response = api.post(URL, body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "invalid"


def test_the_command_imports_a_file_with_progress_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    rows = [_conversation(f"c-{n}") for n in range(3)] + [{"conversation_id": "broken"}]
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    out, err = io.StringIO(), io.StringIO()
    call_command("import_conversations", str(path), "--tenant", "acme", stdout=out, stderr=err)
    assert out.getvalue().strip() == "3 imported, 0 already there, 1 refused, of 4."
    assert "4/4" in err.getvalue() and "conversation 3 refused" in err.getvalue()
    out = io.StringIO()
    call_command(
        "import_conversations", str(path), "--tenant", "acme", stdout=out, stderr=io.StringIO()
    )
    assert out.getvalue().strip() == "0 imported, 3 already there, 1 refused, of 4."
    assert ChatSession.objects.filter(tenant__name="acme", user_id="ana").count() == 3


def test_a_nul_character_refuses_the_request_naming_its_place(api: APIClient) -> None:
    """NUL is refused where the body is parsed, for every route alike: the whole request
    is a 400 naming the field, and nothing is written."""
    bad = _conversation("bad") | {"messages": [{"role": "user", "content": "a\u0000b"}]}
    response = api.post(URL, {"conversations": [_conversation("good"), bad]}, format="json")
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["conversations.1.messages.0.content"]
    assert not ChatSession.objects.filter(external_session_id__in=["good", "bad"]).exists()
