"""Extraction from recorded turns: the hook, the heuristic rules and their precision on a
labelled sample, and the LLM path against the loopback server speaking the
chat-completions protocol."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from django.core.management import call_command
from django.test import override_settings

from memory_app.extraction.llm import parse_llm_memories
from memory_app.models import Memory
from memory_app.services.demo import DEMO_USERS
from memory_app.services.extraction import extract_heuristic
from memory_app.tasks import extract_memories_from_turn
from sessions_app.hooks import turn_recorded
from sessions_app.models import ChatTurn, Tenant
from sessions_app.services.sessions import session_create
from tests.integrations.loopback import FakeLLM, serve_fake_llm
from tests.memory_app.extraction_sample import NEGATIVE, POSITIVE

pytestmark = pytest.mark.django_db


def record_turn(tenant: Tenant, message: str, user_id: str = "alice") -> ChatTurn:
    """Stands in for the turn service: a stored turn, then the hook it sends after commit."""
    session = session_create(tenant=tenant, user_id=user_id, agent_id="shop")
    turn = ChatTurn.objects.create(
        tenant=tenant, session=session, turn_number=1, user_message=message
    )
    turn_recorded.send(sender=ChatTurn, turn_id=turn.pk, session_id=session.pk, tenant_id=tenant.pk)
    return turn


def test_heuristic_finds_stated_facts_and_durable_preferences() -> None:
    found = extract_heuristic(
        "Hi! My name is Alice Moreau. I'm allergic to peanuts; please keep it short. "
        "I live in Lisbon and I work at Initech. Call me Ali. I prefer window seats. "
        "My budget is 1500 euros. I hate long meetings. What's the weather like? "
        "My daughter Emma just started school. I love that!"
    )
    by_key = {next(iter(c.structured)): c for c in found}
    assert {key: c.type for key, c in by_key.items()} == {
        "name": "profile",
        "allergy": "fact",
        "response_style": "preference",
        "home": "profile",
        "employer": "profile",
        "preferred_name": "profile",
        "prefers": "preference",
        "budget": "fact",
        "dislikes": "preference",
        "family": "fact",
    }
    assert by_key["allergy"].structured == {"allergy": "peanuts"}
    assert by_key["allergy"].content == "I'm allergic to peanuts"  # the user's own clause
    assert by_key["budget"].summary == "User's budget is 1500 euros"
    assert by_key["dislikes"].summary == "User hates long meetings"
    # What is said of a relative is kept with the name, not only the name.
    assert by_key["family"].summary == "User's daughter Emma just started school"
    assert by_key["preferred_name"].summary == "User wants to be called Ali"


@pytest.mark.parametrize(
    "message",
    [
        "I like these ideas",
        "I love that!",
        "I like how you put it.",
        "What laptops do you have under 1000 euros?",
        "If I lived in Paris I'd eat croissants every day.",
        "I don't live in London anymore.",
        "My sister is allergic to cats.",
        "As an AI, I don't have personal preferences.",
        "Could you call me a taxi?",
        "I'm a terrible cook, honestly.",
    ],
)
def test_heuristic_ignores_what_states_nothing_about_the_user(message: str) -> None:
    assert extract_heuristic(message) == []


def test_heuristic_summaries_speak_of_the_user() -> None:
    [hiking] = extract_heuristic("I love going hiking with my dog on weekends")
    assert hiking.summary == "User loves going hiking with their dog on weekends"
    [home] = extract_heuristic("Oh btw, I've lived in Tokyo since 2015, it's great")
    assert home.summary == "User lives in Tokyo"  # the value ends where the clause moves on
    assert home.content == "I've lived in Tokyo since 2015, it's great"  # the user's words


@pytest.mark.parametrize(
    "message",
    [
        "",
        "\x00\ud800?!",
        "I love " + "a " * 5000,
        "I'm a " + "very " * 3000 + "nurse",
        "my name is " + "A" * 9000,
        "I live in " + ", ".join(["Xanadu"] * 2000),
    ],
)
def test_heuristic_survives_odd_messages(message: str) -> None:
    found = extract_heuristic(message)
    assert len(found) <= 1
    assert all(len(c.content) <= 300 and len(c.summary) <= 300 for c in found)


def test_heuristic_precision_and_recall_on_the_labelled_sample(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A message counts as found when the extractor gives a memory of the labelled type;
    any memory from a negative message, or only of other types, is a false positive."""
    assert len(POSITIVE) + len(NEGATIVE) >= 120 and len(POSITIVE) >= 60 <= len(NEGATIVE)
    true_pos = false_pos = 0
    missed: list[str] = []
    for message, expected in POSITIVE:
        types = {c.type for c in extract_heuristic(message)}
        if expected in types:
            true_pos += 1
        else:
            missed.append(message)
            false_pos += bool(types)
    wrongly_found = [message for message in NEGATIVE if extract_heuristic(message)]
    false_pos += len(wrongly_found)
    precision = true_pos / (true_pos + false_pos)
    recall = true_pos / len(POSITIVE)
    with capsys.disabled():
        print(
            f"\nheuristic extraction on {len(POSITIVE)} positive + {len(NEGATIVE)} negative "
            f"labelled messages: precision {precision:.3f}, recall {recall:.3f} "
            f"(false positives: {wrongly_found})"
        )
    assert precision >= 0.9, wrongly_found
    assert recall >= 0.6, missed


def test_recorded_turn_yields_memories_once_with_the_turns_time(tenant: Tenant) -> None:
    turn = record_turn(tenant, "I'm allergic to shellfish. Please keep it brief.")
    memories = (
        Memory.objects.filter(tenant=tenant, user_id="alice")
        .exclude(source="conversation_turn")
        .order_by("type")
    )
    assert [(m.type, m.source) for m in memories] == [
        ("fact", "heuristic_extraction"),
        ("preference", "heuristic_extraction"),
    ]
    assert all(m.session_id == turn.session_id and 0 < m.confidence <= 1 for m in memories)
    assert all(m.occurred_at == turn.occurred_at for m in memories)
    assert memories[0].structured["extracted_from"]["turn_id"] == turn.pk
    assert memories[0].structured["stated_at"] == turn.occurred_at.isoformat()
    # Re-running the task on the same turn adds nothing.
    assert extract_memories_from_turn.delay(turn.pk).get()["actions"] == ["duplicate", "duplicate"]
    assert Memory.objects.filter(tenant=tenant).exclude(source="conversation_turn").count() == 2


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    """The loopback OpenAI-compatible server, configured as Engram's LLM."""
    with (
        serve_fake_llm() as fake,
        override_settings(
            ENGRAM_LLM_URL=f"{fake.url}/v1",
            ENGRAM_LLM_API_KEY="sk-test",
            ENGRAM_LLM_MODEL="test-model",
        ),
    ):
        yield fake


def _answer(memories: Any) -> Callable[[dict[str, Any]], str]:
    return lambda body: memories if isinstance(memories, str) else json.dumps(memories)


DATED_LLM_MEMORIES = {
    "memories": [
        {
            "type": "event",
            "content": "Moved to Lisbon",
            "when": "2025-05",
            "when_text": "last May",
            "tags": ["location"],
            "importance": 0.8,
            "confidence": 0.9,
        },
        {"type": "preference", "content": "Is vegetarian", "when": None},
        {"type": "fact", "content": "Has two kids", "importance": 7, "confidence": "high"},
        {"type": "fact", "content": "Born on the 31st of February", "when": "1990-02-31"},
        {"type": "fact", "content": "Started school", "when": "1850-09-01"},
        {"type": "event", "content": "Retires", "when": "2090-01-01"},
        {"type": "gossip", "content": "dropped: unknown type"},
        {"type": "policy", "content": "dropped: not the user's to set"},
        {"type": "fact", "content": "   "},
        {"type": "fact"},
        "not an object",
    ]
}


def assert_request_carries_the_turn_and_its_time(llm: FakeLLM, turn: ChatTurn) -> None:
    [request] = llm.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    body = request["body"]
    assert body["model"] == "test-model" and body["response_format"] == {"type": "json_object"}
    assert "resolve relative times" in body["messages"][0]["content"].lower()
    assert body["messages"][-1]["content"] == (
        f"Written at: {turn.occurred_at.astimezone(UTC).isoformat()} "
        f"({turn.occurred_at.astimezone(UTC):%A})\n\n"
        "Message:\nWe moved to Lisbon last May. No meat for me, and the two kids."
    )


def assert_valid_memories_stored_with_their_time(tenant: Tenant, turn: ChatTurn) -> None:
    stored = {
        m.content: m
        for m in Memory.objects.filter(tenant=tenant).exclude(source="conversation_turn")
    }
    assert set(stored) == {"Moved to Lisbon", "Is vegetarian", "Has two kids"}
    moved = stored["Moved to Lisbon"]
    assert (moved.type, moved.source, moved.confidence, moved.tags) == (
        "event",
        "llm_extraction",
        0.9,
        ["location"],
    )
    assert moved.occurred_at == datetime(2025, 5, 1, tzinfo=UTC)
    assert moved.structured["when_text"] == "last May"
    assert stored["Is vegetarian"].occurred_at == turn.occurred_at  # no time: the turn's
    kids = stored["Has two kids"]
    assert (kids.importance, kids.confidence) == (1.0, 0.7)  # clamped / defaulted


def test_llm_extraction_returns_facts_with_their_time(tenant: Tenant, llm: FakeLLM) -> None:
    llm.chat_reply = _answer(DATED_LLM_MEMORIES)
    turn = record_turn(tenant, "We moved to Lisbon last May. No meat for me, and the two kids.")
    assert_request_carries_the_turn_and_its_time(llm, turn)
    assert_valid_memories_stored_with_their_time(tenant, turn)


@pytest.mark.parametrize(
    "answer",
    [
        "this is not JSON",
        '{"memories": [{"type": "fact", "content": "Lives in Ghent"}',  # cut short
        '["a list, not the object asked for"]',
        '{"memories": "none"}',
        '{"facts": []}',
    ],
)
def test_an_unusable_llm_answer_falls_back_to_rules(
    tenant: Tenant, llm: FakeLLM, answer: str
) -> None:
    llm.chat_reply = _answer(answer)
    record_turn(tenant, "I live in Ghent.")
    assert len(llm.requests) == 1
    assert list(
        Memory.objects.exclude(source="conversation_turn").values_list("content", "source")
    ) == [("I live in Ghent", "heuristic_extraction")]


def test_an_unreachable_llm_falls_back_to_rules(tenant: Tenant, settings: Any) -> None:
    settings.ENGRAM_LLM_URL = "http://127.0.0.1:9/v1"  # nothing listens on discard
    record_turn(tenant, "I work at Globex.", user_id="bob")
    assert list(
        Memory.objects.exclude(source="conversation_turn").values_list("content", "source")
    ) == [("I work at Globex", "heuristic_extraction")]


def test_a_fenced_llm_answer_is_read() -> None:
    written = datetime(2026, 3, 10, 9, 30, tzinfo=UTC)
    fenced = (
        '```json\n{"memories": [{"type": "fact", "content": "Has a cat", "when": "2026-03-09"}]}'
        "\n```"
    )
    [cat] = parse_llm_memories(fenced, written_at=written)
    assert (cat.content, cat.occurred_at) == ("Has a cat", datetime(2026, 3, 9, tzinfo=UTC))


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        ("2024", datetime(2024, 1, 1, tzinfo=UTC)),
        ("2024-07", datetime(2024, 7, 1, tzinfo=UTC)),
        ("2024-07-14", datetime(2024, 7, 14, tzinfo=UTC)),
        ("2024-07-14T18:05:00Z", datetime(2024, 7, 14, 18, 5, tzinfo=UTC)),
        ("2024-07-14T18:05:00+02:00", datetime(2024, 7, 14, 16, 5, tzinfo=UTC)),
        ("2024-07-14T18:05:00", datetime(2024, 7, 14, 18, 5, tzinfo=UTC)),
        ("2024-13-01", None),
        ("1899-12-31", None),
        ("2040-01-01", None),
        ("next Tuesday", None),
        ("", None),
    ],
)
def test_llm_times_parse_or_their_memory_is_skipped(when: str, expected: Any) -> None:
    written = datetime(2026, 3, 10, 9, 30, tzinfo=UTC)
    answer = json.dumps({"memories": [{"type": "event", "content": "Something", "when": when}]})
    found = parse_llm_memories(answer, written_at=written)
    assert [c.occurred_at for c in found] == ([expected] if expected else [])


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
    from sessions_app.services.turn_recording import turn_record

    settings.ENGRAM_LLM_URL = ""
    assert extraction_may_find("I'm allergic to peanuts")
    assert not extraction_may_find("What's the weather like?")
    assert not extraction_may_find("   ")
    session = session_create(tenant=tenant, user_id="alice", agent_id="shop")
    for message in ("What's the weather like?", "I'm allergic to peanuts."):
        with django_capture_on_commit_callbacks(execute=True):  # the hook passes the turn
            turn_record(tenant=tenant, session_id=session.pk, steps=[], user_message=message)
    assert [
        m.content
        for m in Memory.objects.filter(user_id="alice").exclude(source="conversation_turn")
    ] == ["I'm allergic to peanuts"]
    settings.ENGRAM_LLM_URL = "http://127.0.0.1:9"  # with an LLM, any message may hold one
    assert extraction_may_find("What's the weather like?")
