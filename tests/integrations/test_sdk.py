"""The Python SDK (`clients/python`, import `engram`) against a live Engram, with the
real `openai` and `anthropic` clients pointed at a loopback provider."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import engram
import openai
import pytest

from sessions_app.models import ChatTurn
from sessions_app.services.api_keys import IssuedKey
from sessions_app.services.demo_shopping import LAPTOP_FILTERS, LAPTOP_QUERY, LAPTOPS
from tests.integrations.loopback import FakeLLM, serve_dropping_proxy

ACER = LAPTOPS[-1]["mpn"]
TOKEN_KEYS = ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens")


def client_for(live_server: Any, key: IssuedKey, **kwargs: Any) -> engram.Engram:
    return engram.Engram(live_server.url, key.secret, **kwargs)


def totals(session: Any) -> dict[str, int]:
    data = session.get()["totals"]
    return {k: data[k] for k in TOKEN_KEYS}


def test_config_comes_from_the_environment(
    live_server: Any, live_key: IssuedKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_URL", live_server.url)
    monkeypatch.setenv("ENGRAM_API_KEY", live_key.secret)
    with engram.Engram() as client:
        assert client.list_sessions()["results"] == []
    monkeypatch.delenv("ENGRAM_API_KEY")
    with pytest.raises(ValueError, match="ENGRAM_API_KEY"):
        engram.Engram()


def _shop_through_the_session(session: engram.Session) -> None:
    """Results, references, focus, selections, cart, context and budget of one session."""
    stored = session.store_results(query=LAPTOP_QUERY, filters=LAPTOP_FILTERS, items=LAPTOPS)
    assert stored["last_results"][0] == LAPTOPS[0]["mpn"]
    assert len(session.components()["results"]) == len(LAPTOPS)
    cheapest = session.resolve("the cheapest")
    assert cheapest["item"]["mpn"] == ACER and cheapest["rule"] == "superlative"
    session.set_focus(ref="the first one")
    assert session.get()["focus_mpn"] == LAPTOPS[0]["mpn"]
    session.add_selection(ref="the cheapest")
    session.add_selection(mpn=LAPTOPS[0]["mpn"])
    assert [line["mpn"] for line in session.selections()["results"]] == [ACER, LAPTOPS[0]["mpn"]]
    session.reorder_selections([LAPTOPS[0]["mpn"], ACER])
    session.remove_selection(ACER)
    assert [line["mpn"] for line in session.selections()["results"]] == [LAPTOPS[0]["mpn"]]
    assert session.cart_link()["url"].startswith("http")
    context = session.context(query="laptops", budget=2000)
    assert context["session_id"] == session.id and context["budget"] == 2000
    check = session.budget_check(estimated_tokens=1000)
    assert check["allowed"] is True and check["tokens_remaining_after"] == 49_000


def _maria_fact(content: str) -> dict[str, str]:
    return {"user_id": "maria", "agent_id": "shop", "type": "fact", "content": content}


def _memories_round_trip(client: engram.Engram) -> None:
    """Memories: add, bulk, search, get, update, history, delete."""
    added = client.add_memory(
        user_id="maria", agent_id="shop", type="preference", content="Maria prefers matte screens."
    )
    memory_id = added["memory"]["id"]
    bulk = client.add_memories(
        [_maria_fact("Maria lives in Lyon."), _maria_fact("Maria codes in Rust.")]
    )
    assert bulk["counts"]["created"] == 2
    found = client.search_memories("What screens does Maria like?", user_id="maria")
    assert found["results"][0]["memory"]["id"] == memory_id
    assert client.get_memory(memory_id, acting_user_id="maria")["content"].startswith("Maria")
    client.update_memory(
        memory_id,
        content="Maria prefers matte, 15-inch screens.",
        acting={"acting_user_id": "maria"},
    )
    history = client.memory_history(memory_id, acting_user_id="maria")
    assert [v["version"] for v in history["versions"]] == [1, 2]
    client.delete_memory(memory_id, acting_user_id="maria")
    with pytest.raises(engram.NotFound) as missing:
        client.get_memory(memory_id, acting_user_id="maria")
    assert missing.value.status == 404 and missing.value.code == "not_found"


def _errors_carry_the_api_code(
    client: engram.Engram, session: engram.Session, foreign: engram.Engram
) -> None:
    """Errors carry the API's code and fields; another tenant's session is a 404."""
    with pytest.raises(engram.InvalidRequest) as invalid:
        client.create_session(user_id="", agent_id="shop")
    assert invalid.value.code == "invalid" and "user_id" in invalid.value.fields
    with pytest.raises(engram.Unresolved) as unresolved:
        session.resolve("the purple one")
    assert unresolved.value.code == "unresolved"
    with pytest.raises(engram.NotFound):
        foreign.session(session.id).get()


def test_the_sync_surface_end_to_end(
    live_server: Any, live_key: IssuedKey, other_live_key: IssuedKey
) -> None:
    client = client_for(live_server, live_key)
    session = client.create_session(user_id="maria", agent_id="shop", budget_tokens=50_000)
    assert isinstance(session, engram.Session)
    _shop_through_the_session(session)

    # Resume by identity: the same external id finds the same session.
    first = client.resume_session(user_id="maria", agent_id="cli", external_session_id="c-1")
    again = client.resume_session(user_id="maria", agent_id="cli", external_session_id="c-1")
    assert first.id == again.id

    _memories_round_trip(client)
    _errors_carry_the_api_code(client, session, client_for(live_server, other_live_key))

    usage = client.usage(group_by="agent")
    assert "rows" in usage
    client.erase_user("maria")
    with pytest.raises(engram.NotFound):
        session.get()


def test_budget_exceeded_that_waiting_cannot_lift_has_no_retry_after(
    live_server: Any, live_key: IssuedKey
) -> None:
    client = client_for(live_server, live_key, max_retries=0)
    session = client.create_session(user_id="u", agent_id="a", budget_tokens=100)
    with pytest.raises(engram.BudgetExceeded) as exceeded:
        session.budget_check(estimated_tokens=500)
    assert exceeded.value.status == 429 and exceeded.value.code == "budget_exceeded"
    # A session's own budget does not reset: the server sends no Retry-After.
    assert exceeded.value.retry_after is None
    assert exceeded.value.budget["budget_tokens"] == 100


class ToolBroke(RuntimeError):
    pass


def _record_a_turn_of_four_steps(session: engram.Session, fake_llm: FakeLLM) -> dict[str, Any]:
    """A turn block tracking an OpenAI chat call, a Responses call in a step, an Anthropic
    message and a tool call; the turn as recorded."""
    llm = openai.OpenAI(base_url=fake_llm.url + "/v1", api_key="sk-test", max_retries=0)
    claude = anthropic.Anthropic(base_url=fake_llm.url, api_key="sk-test", max_retries=0)
    with session.turn(user_message="Which is cheapest?") as turn:
        chat = llm.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Which is cheapest?"}]
        )
        turn.track(chat, step_type="intent")
        with turn.step("response") as step:
            step.track(llm.responses.create(model="gpt-4o", input="Answer the user."))
        turn.track(
            claude.messages.create(
                model="claude-haiku-4-5", max_tokens=100,
                messages=[{"role": "user", "content": "Summarise."}],
            ),
            step_type="summary",
        )  # fmt: skip
        turn.add_step("search", duration_ms=12)  # a tool call
        turn.assistant_response = chat.choices[0].message.content or ""
    return turn.result["turn"]  # type: ignore[no-any-return]


def _assert_a_failed_step_is_kept(session: engram.Session) -> None:
    """A tool that raises inside a step: the turn is recorded with that step failed."""
    with (
        pytest.raises(ToolBroke),
        session.turn(user_message="And the Dell?") as failing,
        failing.step("search"),
    ):
        raise ToolBroke("inventory service down")
    turns = session.list_turns()["results"]
    assert len(turns) == 2
    failed_step = turns[1]["steps"][0]
    assert failed_step["success"] is False and "inventory service down" in failed_step["error"]
    assert turns[1]["error_count"] == 1 and turns[1]["metadata"]["error"].startswith("ToolBroke")


def test_a_turn_block_records_once_and_keeps_a_failure(
    live_server: Any, live_key: IssuedKey, fake_llm: FakeLLM
) -> None:
    client = client_for(live_server, live_key)
    session = client.create_session(user_id="u", agent_id="a")
    recorded = _record_a_turn_of_four_steps(session, fake_llm)
    assert recorded["turn_number"] == 1
    assert [s["step_type"] for s in recorded["steps"]] == [
        "intent",
        "response",
        "summary",
        "search",
    ]
    assert recorded["steps"][0]["model"] == "gpt-4o-mini"
    assert recorded["steps"][1]["reasoning_tokens"] == 3
    assert recorded["steps"][2]["cache_write_tokens"] == 8
    assert totals(session) == fake_llm.totals()

    _assert_a_failed_step_is_kept(session)

    with pytest.raises(KeyError), session.turn(user_message="boom"):
        raise KeyError("no step open")
    last = session.list_turns()["results"][-1]
    assert last["steps"][0]["step_type"] == "error" and last["steps"][0]["success"] is False


def test_a_retried_turn_after_a_dropped_response_is_stored_once(
    live_server: Any, live_key: IssuedKey
) -> None:
    drops = {"left": 1}

    def drop_first_turn(method: str, path: str) -> bool:
        if method == "POST" and path.endswith("/turns") and drops["left"]:
            drops["left"] -= 1
            return True
        return False

    with serve_dropping_proxy(live_server.url, drop_first_turn) as proxy:
        client = engram.Engram(proxy.url, live_key.secret, backoff_base=0.01)
        session = client.create_session(user_id="u", agent_id="a")
        step = {
            "step_type": "response",
            "model": "gpt-4o-mini",
            "input_tokens": 120,
            "output_tokens": 30,
        }
        result = session.record_turn(user_message="hi", steps=[step])
        assert totals(session)["input_tokens"] == 120
    assert proxy.dropped == [f"POST /api/v1/sessions/{session.id}/turns"]
    assert proxy.forwarded.count(f"POST /api/v1/sessions/{session.id}/turns") == 2
    assert result["turn"]["turn_number"] == 1
    assert ChatTurn.objects.filter(session_id=session.id).count() == 1


def test_wrapped_clients_add_up_to_the_session_totals(
    live_server: Any, live_key: IssuedKey, fake_llm: FakeLLM
) -> None:
    client = client_for(live_server, live_key)
    session = client.create_session(user_id="u", agent_id="a")
    llm = engram.wrap_openai(
        openai.OpenAI(base_url=fake_llm.url + "/v1", api_key="sk-test", max_retries=0), session
    )
    claude = engram.wrap_anthropic(
        anthropic.Anthropic(base_url=fake_llm.url, api_key="sk-test", max_retries=0), session
    )
    messages = [{"role": "user", "content": "Find me a laptop"}]

    chat = llm.chat.completions.create(model="gpt-4o-mini", messages=messages)
    assert chat.choices[0].message.content
    streamed = "".join(
        chunk.choices[0].delta.content or ""
        for chunk in llm.chat.completions.create(
            model="gpt-4o-mini", messages=messages, stream=True
        )
        if chunk.choices
    )
    assert streamed.strip() == chat.choices[0].message.content
    llm.responses.create(model="gpt-4o", input="Find me a laptop")
    for _ in llm.responses.create(model="gpt-4o", input="Stream it", stream=True):
        pass
    claude.messages.create(model="claude-haiku-4-5", max_tokens=50, messages=messages)
    with claude.messages.create(
        model="claude-haiku-4-5", max_tokens=50, messages=messages, stream=True
    ) as events:
        for _ in events:
            pass

    # Inside a turn, wrapped calls become steps of that turn.
    with session.turn(user_message="two calls, one turn") as turn:
        llm.chat.completions.create(model="gpt-4o-mini", messages=messages)
        claude.messages.create(model="claude-haiku-4-5", max_tokens=50, messages=messages)
    assert len(turn.result["turn"]["steps"]) == 2

    assert len(fake_llm.served) == 8
    assert all(s.input_tokens > 0 for s in fake_llm.served)  # usage found in every stream
    assert totals(session) == fake_llm.totals()
    turns = session.list_turns()["results"]
    assert len(turns) == 7
    assert turns[1]["assistant_response"].strip() == chat.choices[0].message.content
    assert turns[0]["user_message"] == "Find me a laptop"


def test_async_client_has_the_same_surface(
    live_server: Any, live_key: IssuedKey, fake_llm: FakeLLM
) -> None:
    async def main() -> tuple[dict[str, int], dict[str, Any]]:
        async with engram.AsyncEngram(live_server.url, live_key.secret) as client:
            session = await client.create_session(user_id="u", agent_id="a")
            assert isinstance(session, engram.AsyncSession)
            await session.store_results(query=LAPTOP_QUERY, items=LAPTOPS)
            cheapest = await session.resolve("the cheapest")
            await session.add_selection(mpn=cheapest["item"]["mpn"])
            llm = engram.wrap_openai(
                openai.AsyncOpenAI(base_url=fake_llm.url + "/v1", api_key="k", max_retries=0),
                session,
            )
            claude = engram.wrap_anthropic(
                anthropic.AsyncAnthropic(base_url=fake_llm.url, api_key="k", max_retries=0),
                session,
            )
            msgs = [{"role": "user", "content": "hello"}]
            await llm.chat.completions.create(model="gpt-4o-mini", messages=msgs)
            async for _ in await llm.chat.completions.create(
                model="gpt-4o-mini", messages=msgs, stream=True
            ):
                pass
            async with session.turn(user_message="in a turn") as turn:
                reply = await claude.messages.create(
                    model="claude-haiku-4-5", max_tokens=10, messages=msgs
                )
                turn.assistant_response = reply.content[0].text
            with pytest.raises(engram.NotFound):
                await client.get_session("00000000-0000-0000-0000-000000000000")
            data = await session.get()
            return {k: data["totals"][k] for k in TOKEN_KEYS}, await session.selections()

    got, cart = asyncio.run(main())
    assert got == fake_llm.totals()
    assert [line["mpn"] for line in cart["results"]] == [ACER]


def test_background_mode_sends_queued_turns_through_the_batch_route(
    live_server: Any, live_key: IssuedKey
) -> None:
    """Queued turns go out through `POST /turns/batch` and each lands exactly once."""
    with client_for(live_server, live_key, background=True, flush_interval=0.05) as client:
        session = client.create_session(user_id="u", agent_id="a")
        for n in range(25):
            step = {
                "step_type": "llm",
                "model": "gpt-4o-mini",
                "input_tokens": 10 + n,
                "output_tokens": 5,
            }
            assert session.record_turn(user_message=f"turn {n}", steps=[step]) is None
        with session.turn(user_message="block") as turn:
            turn.add_step("llm", model="gpt-4o-mini", input_tokens=7, output_tokens=1)
        client.flush()
        sender = client.background
        assert sender is not None and sender.failed == [] and sender.dropped == 0
        assert sender.batch_supported is not False  # the server has the batch route
        data = session.get()["totals"]
    assert data["turns"] == 26
    assert data["input_tokens"] == sum(10 + n for n in range(25)) + 7
    assert ChatTurn.objects.filter(session_id=session.id).count() == 26


def test_background_queue_is_bounded(live_server: Any, live_key: IssuedKey) -> None:
    client = client_for(live_server, live_key, background=True, max_queue=2, flush_interval=30)
    try:
        session = client.session("00000000-0000-0000-0000-000000000000")
        sender = client.background
        assert sender is not None
        sender._stop.set()  # hold the flush thread back so the queue fills
        sender._thread.join(timeout=35)
        for _ in range(5):
            session.record_turn(steps=[])
        assert sender.dropped == 3 and sender.queue.qsize() == 2
    finally:
        client._transport.close()


def test_retries_429_and_503_only_then_gives_up(live_server: Any, live_key: IssuedKey) -> None:
    plan: dict[str, list[int]] = {"GET": [503, 429], "POST": [400]}

    def fail_with(method: str, path: str) -> int | None:
        if path.startswith("/api/v1/sessions") and plan.get(method):
            return plan[method].pop(0)
        return None

    never = lambda method, path: False  # noqa: E731
    with serve_dropping_proxy(live_server.url, never, fail_with) as proxy:
        client = engram.Engram(proxy.url, live_key.secret, backoff_base=0.01)
        # Two transient answers, then the real one.
        assert client.list_sessions()["results"] == []
        assert proxy.failed == ["503 GET /api/v1/sessions", "429 GET /api/v1/sessions"]
        # A 400 is not retried.
        with pytest.raises(engram.InvalidRequest):
            client.create_session(user_id="u", agent_id="a")
        assert len(proxy.failed) == 3
        assert not any(f.startswith("POST") for f in proxy.forwarded)
        # Past max_retries, the last error is raised.
        plan["GET"] = [503] * 5
        stubborn = engram.Engram(proxy.url, live_key.secret, max_retries=2, backoff_base=0.01)
        with pytest.raises(engram.ServiceUnavailable) as down:
            stubborn.list_sessions()
        assert down.value.code == "dependency_unavailable" and plan["GET"] == [503, 503]
    # Nothing listens any more: a connection error, retried, then raised as such.
    with pytest.raises(engram.APIConnectionError):
        engram.Engram(proxy.url, live_key.secret, max_retries=1, backoff_base=0.01).list_sessions()
