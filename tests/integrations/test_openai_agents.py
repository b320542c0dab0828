"""`engram.openai_agents.EngramSession` with the real `openai-agents` package: its Runner
against a loopback Responses API, the conversation kept in a live Engram."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any

import pytest
from agents import Agent, OpenAIResponsesModel, Runner, set_tracing_disabled
from agents.exceptions import UserError
from agents.memory import Session as AgentsSession
from django.conf import settings
from engram import AsyncEngram, Engram
from engram.openai_agents import EngramSession, EngramSessionError
from openai import AsyncOpenAI

from sessions_app.models import ChatSession, ChatTurn
from sessions_app.services.api_keys import IssuedKey
from tests.integrations.loopback import ANSWER, FakeLLM

MODEL = "gpt-4.1-mini"


def _agent(fake: FakeLLM, **kwargs: Any) -> Agent:
    client = AsyncOpenAI(base_url=fake.url + "/v1", api_key="sk-loopback")
    return Agent(name="shop", model=OpenAIResponsesModel(MODEL, client), **kwargs)


def _session(live_server: Any, key: IssuedKey, **kwargs: Any) -> EngramSession:
    client = AsyncEngram(live_server.url, key.secret, max_retries=0)
    return EngramSession(client=client, model=MODEL, **kwargs)


def _run(coroutine: Any) -> Any:
    set_tracing_disabled(True)
    return asyncio.run(coroutine)


def _texts(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
    out = []
    for item in items:
        content = item.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content)
        out.append((item.get("role", ""), content))
    return out


def test_a_run_is_kept_as_turns_with_the_models_usage(
    live_server: Any, live_key: IssuedKey, fake_llm: FakeLLM
) -> None:
    session = _session(live_server, live_key, user_id="maria", agent_id="a", conversation_id="c1")
    assert isinstance(session, AgentsSession)  # the SDK's runtime-checkable protocol

    async def scenario() -> tuple[Any, list[Any]]:
        first = await Runner.run(_agent(fake_llm), "Find me a laptop", session=session)
        second = await Runner.run(_agent(fake_llm), "Which is cheapest?", session=session)
        return (first, second), await session.get_items()

    (first, second), items = _run(scenario())
    assert first.final_output == second.final_output == ANSWER
    assert _texts(items) == [
        ("user", "Find me a laptop"),
        ("assistant", ANSWER),
        ("user", "Which is cheapest?"),
        ("assistant", ANSWER),
    ]
    # The second model call saw the first exchange: the history came from Engram.
    assert [m.get("content") for m in fake_llm.requests[1]["body"]["input"]][:1] == ["Find me a laptop"]
    stored = ChatSession.objects.get(external_session_id="c1")
    totals = fake_llm.totals()
    assert stored.total_input_tokens == totals["input_tokens"] > 0
    assert stored.total_output_tokens == totals["output_tokens"]
    assert stored.total_cached_tokens == totals["cached_tokens"]
    steps = [s for t in ChatTurn.objects.filter(session=stored) for s in t.steps.all()]
    assert [s.model for s in steps] == [MODEL, MODEL]


def test_pop_and_clear_shrink_the_history_not_the_totals(
    live_server: Any, live_key: IssuedKey, fake_llm: FakeLLM
) -> None:
    session = _session(live_server, live_key, user_id="maria", agent_id="a", conversation_id="c2")

    async def scenario() -> tuple[Any, ...]:
        await Runner.run(_agent(fake_llm), "Find me a laptop", session=session)
        await session.add_items(
            [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}]
        )
        popped = await session.pop_item()
        after_pop = await session.get_items()
        last_two = await session.get_items(limit=2)
        await session.clear_session()
        return popped, after_pop, last_two, await session.get_items(), await session.pop_item()

    popped, after_pop, last_two, cleared, nothing = _run(scenario())
    assert popped == {"role": "user", "content": "two"}
    assert _texts(after_pop) == [
        ("user", "Find me a laptop"),
        ("assistant", ANSWER),
        ("user", "one"),
    ]
    assert _texts(last_two) == [("assistant", ANSWER), ("user", "one")]
    assert cleared == [] and nothing is None
    stored = ChatSession.objects.get(external_session_id="c2")
    assert stored.total_input_tokens == fake_llm.totals()["input_tokens"]


def test_the_example_resumes_the_conversation_in_a_second_process(
    live_server: Any, live_key: IssuedKey, fake_llm: FakeLLM
) -> None:
    env = {
        **os.environ,
        "ENGRAM_URL": live_server.url,
        "ENGRAM_API_KEY": live_key.secret,
        "OPENAI_BASE_URL": fake_llm.url + "/v1",
        "OPENAI_API_KEY": "sk-loopback",
    }
    example = settings.BASE_DIR / "examples" / "openai_agents_session.py"
    assert len(example.read_text().splitlines()) < 60
    with Engram(live_server.url, live_key.secret) as client:  # what the context brings in
        client.add_memory(
            user_id="maria", type="preference", content="Maria wants a laptop under 1.5 kg."
        )
    outputs = []
    for message in ("Find me a laptop under $1500", "Which one is the cheapest?"):
        run = subprocess.run(
            [sys.executable, str(example), message],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stderr
        outputs.append(run.stdout)
    assert f"answer: {ANSWER}" in outputs[1] and "history: 4 items" in outputs[1]
    # The agent's instructions, then what Engram's context holds for the message: the
    # memory is relevant to the first question, not to the second (ranked out).
    instructions = [request["body"]["instructions"] for request in fake_llm.requests]
    assert all(text.startswith("You help Maria choose a laptop.") for text in instructions)
    assert "Maria wants a laptop under 1.5 kg." in instructions[0]
    assert "Maria wants a laptop under 1.5 kg." not in instructions[1]
    second_input = [m.get("content") for m in fake_llm.requests[1]["body"]["input"]]
    assert second_input[0] == "Find me a laptop under $1500"
    assert second_input[-1] == "Which one is the cheapest?"
    stored = ChatSession.objects.get(external_session_id="agents-chat-1")
    assert stored.turn_count == 4
    tokens = fake_llm.totals()["input_tokens"] + fake_llm.totals()["output_tokens"]
    assert f"spend: {tokens} tokens" in outputs[1]


def test_bad_input_raises_the_sdks_user_error(
    live_server: Any, live_key: IssuedKey, other_live_key: IssuedKey
) -> None:
    with pytest.raises(UserError, match="Name the session"):
        _session(live_server, live_key, user_id="maria")
    with pytest.raises(UserError, match="non-empty string"):
        _session(live_server, live_key, engram_session_id=42)  # type: ignore[arg-type]

    async def errors_of(*calls: Any) -> list[Exception]:
        errors: list[Exception] = []
        for call in calls:
            try:
                await call
            except Exception as exc:
                errors.append(exc)
        return errors

    async def scenario() -> None:
        theirs = _session(
            live_server, other_live_key, user_id="u", agent_id="a", conversation_id="x"
        )
        their_id = await theirs.engram_session_id()
        for session_id in ("5b1c9f0e-0000-4000-8000-000000000000", their_id, "not-a-uuid"):
            session = _session(live_server, live_key, engram_session_id=session_id)
            errors = await errors_of(
                session.get_items(),
                session.add_items([{"role": "user", "content": "hi"}]),
                session.pop_item(),
                session.clear_session(),
            )
            assert len(errors) == 4 and all(isinstance(e, EngramSessionError) for e in errors)
            assert {e.cause.status for e in errors} == {404}  # type: ignore[attr-defined]
        assert await theirs.get_items() == []  # nothing reached the other tenant's session

        ok = _session(live_server, live_key, user_id="u", agent_id="a", conversation_id="y")
        errors = await errors_of(
            ok.add_items("hello"),  # type: ignore[arg-type]
            ok.add_items([1, 2]),  # type: ignore[list-item]
            ok.add_items([{"role": "user", "content": "x" * 300_000}]),
            ok.get_items(limit=-1),
        )
        assert len(errors) == 4 and all(isinstance(e, UserError) for e in errors)
        assert errors[2].cause.status == 400  # type: ignore[attr-defined]  # text too long
        assert await ok.get_items() == []

    _run(scenario())
