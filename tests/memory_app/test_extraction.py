"""Extraction from recorded turns: the hook, the heuristic rules, and the LLM path against
a real loopback HTTP server speaking the chat-completions protocol."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from django.core.management import call_command
from django.test import override_settings

from memory_app.models import Memory
from memory_app.services.demo import DEMO_USERS
from memory_app.services.extraction import extract_heuristic
from memory_app.tasks import extract_memories_from_turn
from sessions_app.hooks import turn_recorded
from sessions_app.models import ChatTurn, Tenant
from sessions_app.services.sessions import session_create

pytestmark = pytest.mark.django_db


def record_turn(tenant: Tenant, message: str, user_id: str = "alice") -> ChatTurn:
    """Stands in for the turn service: a stored turn, then the hook it sends after commit."""
    session = session_create(tenant=tenant, user_id=user_id, agent_id="shop")
    turn = ChatTurn.objects.create(
        tenant=tenant, session=session, turn_number=1, user_message=message
    )
    turn_recorded.send(sender=ChatTurn, turn_id=turn.pk, session_id=session.pk, tenant_id=tenant.pk)
    return turn


def test_heuristic_rules_find_preferences_and_facts() -> None:
    found = extract_heuristic(
        "Hi! My name is Alice Moreau. I'm allergic to peanuts; please keep it short. "
        "I live in Lisbon and I work at Initech. Call me Ali. I prefer window seats. "
        "My budget is 1500 euros. I hate long meetings. What's the weather like?"
    )
    by_key = {next(iter(c.structured)): c for c in found}
    assert set(by_key) == {
        "name",
        "allergy",
        "response_style",
        "home",
        "employer",
        "preferred_name",
        "prefers",
        "budget",
        "likes",
    }
    assert by_key["allergy"].type == "fact" and by_key["allergy"].structured == {
        "allergy": "peanuts"
    }
    assert by_key["response_style"].type == "preference"
    assert by_key["budget"].summary == "User's budget is 1500 euros"
    assert by_key["likes"].summary == "User hates long meetings"
    assert extract_heuristic("What laptops do you have under 1000 euros?") == []


def test_recorded_turn_yields_memories_once(tenant: Tenant) -> None:
    turn = record_turn(tenant, "I'm allergic to shellfish. Please keep it brief.")
    memories = Memory.objects.filter(tenant=tenant, user_id="alice").order_by("type")
    assert [(m.type, m.source) for m in memories] == [
        ("fact", "heuristic_extraction"),
        ("preference", "heuristic_extraction"),
    ]
    assert all(m.session_id == turn.session_id and 0 < m.confidence <= 1 for m in memories)
    assert memories[0].structured["extracted_from"]["turn_id"] == turn.pk
    # Re-running the task on the same turn adds nothing.
    assert extract_memories_from_turn.delay(turn.pk).get()["actions"] == ["duplicate", "duplicate"]
    assert Memory.objects.filter(tenant=tenant).count() == 2


class _ChatCompletions(BaseHTTPRequestHandler):
    """A minimal OpenAI-compatible server; the reply is set per test."""

    reply: Any = None
    status = 200
    seen: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        type(self).seen.append(
            {
                "path": self.path,
                "auth": self.headers.get("Authorization"),
                "body": json.loads(self.rfile.read(length)),
            }
        )
        content = self.reply if isinstance(self.reply, str) else json.dumps(self.reply)
        payload = json.dumps(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": "test-model",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": content},
                    }
                ],
                "usage": {"prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160},
            }
        ).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def llm_server() -> Iterator[type[_ChatCompletions]]:
    server = HTTPServer(("127.0.0.1", 0), _ChatCompletions)
    _ChatCompletions.seen = []
    _ChatCompletions.status = 200
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}/v1"
    with override_settings(
        ENGRAM_LLM_URL=url, ENGRAM_LLM_API_KEY="sk-test", ENGRAM_LLM_MODEL="test-model"
    ):
        yield _ChatCompletions
    server.shutdown()
    server.server_close()


def test_llm_extractor_speaks_chat_completions(tenant: Tenant, llm_server: Any) -> None:
    llm_server.reply = {
        "memories": [
            {
                "type": "preference",
                "content": "Prefers vegetarian restaurants",
                "summary": "User prefers vegetarian restaurants",
                "tags": ["food"],
                "structured": {"diet": "vegetarian"},
                "importance": 0.8,
                "confidence": 0.9,
            },
            {"type": "gossip", "content": "dropped: unknown type"},
            {"type": "fact", "content": "   "},
            {"type": "fact", "content": "Has two kids", "importance": 7, "confidence": "high"},
        ]
    }
    record_turn(tenant, "We never eat meat, and the two kids love pasta.")
    request = llm_server.seen[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer sk-test"
    assert request["body"]["model"] == "test-model"
    assert request["body"]["messages"][-1]["content"] == (
        "We never eat meat, and the two kids love pasta."
    )
    stored = {m.content: m for m in Memory.objects.filter(tenant=tenant)}
    assert set(stored) == {"Prefers vegetarian restaurants", "Has two kids"}
    veg = stored["Prefers vegetarian restaurants"]
    assert (veg.source, veg.confidence, veg.tags) == ("llm_extraction", 0.9, ["food"])
    assert veg.structured["diet"] == "vegetarian"
    kids = stored["Has two kids"]
    assert (kids.importance, kids.confidence) == (1.0, 0.7)  # clamped / defaulted


def test_llm_failure_falls_back_to_rules(tenant: Tenant, llm_server: Any) -> None:
    llm_server.reply = "this is not JSON"
    record_turn(tenant, "I live in Ghent.")
    llm_server.status = 500
    llm_server.reply = {"memories": []}
    record_turn(tenant, "I work at Globex.", user_id="bob")
    assert len(llm_server.seen) == 2
    assert sorted(Memory.objects.values_list("content", "source")) == [
        ("I live in Ghent", "heuristic_extraction"),
        ("I work at Globex", "heuristic_extraction"),
    ]


def test_demo_holds_memories_for_the_demo_users() -> None:
    call_command("load_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    demo = Tenant.objects.get(name="demo")
    for user_id in DEMO_USERS:
        memories = Memory.objects.filter(tenant=demo, user_id=user_id)
        assert memories.count() >= 3
        assert memories.filter(source="heuristic_extraction").exists()
    assert Memory.objects.filter(tenant=demo, scope="public", pinned=True).exists()


def test_the_hook_enqueues_extraction_only_when_something_may_be_found(
    tenant: Tenant, django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    from memory_app.services.extraction import extraction_may_find
    from sessions_app.services.turns import turn_record

    settings.ENGRAM_LLM_URL = ""
    assert extraction_may_find("I'm allergic to peanuts")
    assert not extraction_may_find("What's the weather like?")
    assert not extraction_may_find("   ")
    session = session_create(tenant=tenant, user_id="alice", agent_id="shop")
    for message in ("What's the weather like?", "I'm allergic to peanuts."):
        with django_capture_on_commit_callbacks(execute=True):  # the hook passes the turn
            turn_record(tenant=tenant, session_id=session.pk, steps=[], user_message=message)
    assert [m.content for m in Memory.objects.filter(user_id="alice")] == [
        "I'm allergic to peanuts"
    ]
    settings.ENGRAM_LLM_URL = "http://127.0.0.1:9"  # with an LLM, any message may hold one
    assert extraction_may_find("What's the weather like?")
