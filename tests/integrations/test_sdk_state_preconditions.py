"""The Python SDK and optimistic concurrency on a session's state, against a live
Engram: the handle keeps the state's tag it last saw (`state_etag`), `update`,
`record_turn` and the turn block take it as `if_match`, and a stale one raises
`engram.PreconditionFailed` (412, with the current tag) with nothing written."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import engram
import pytest

from sessions_app.models import ChatSession, ChatTurn, TurnStep
from sessions_app.selectors.session_state import state_etag
from sessions_app.services.api_keys import IssuedKey

STEP = {"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 300,
        "output_tokens": 40}  # fmt: skip


def _recorded(sid: str) -> tuple[Any, int, int]:
    """The state, the turns and the steps the database holds for the session."""
    turns = ChatTurn.objects.filter(session_id=sid).count()
    steps = TurnStep.objects.filter(turn__session_id=sid).count()
    return ChatSession.objects.get(pk=sid).state, turns, steps


def _assert_stale(refused: pytest.ExceptionInfo[engram.PreconditionFailed], current: str) -> None:
    error = refused.value
    assert isinstance(error, engram.APIError) and error.status == 412
    assert error.code == "precondition_failed" and list(error.fields) == ["If-Match"]
    assert error.state_etag == current


def test_update_takes_the_handles_etag_and_a_stale_one_raises(
    live_server: Any, live_key: IssuedKey
) -> None:
    client = engram.Engram(live_server.url, live_key.secret, max_retries=0)
    session = client.create_session(user_id="u", agent_id="a", state={"stage": "browsing"})
    first = session.state_etag
    assert (
        first == state_etag({"stage": "browsing"}) == client.get_session(session.id)["state_etag"]
    )

    updated = session.update(state={"stage": "cart"}, if_match=first)
    assert updated["state_etag"] == session.state_etag == state_etag({"stage": "cart"})
    # Another agent, with the tag it read before that update, is refused.
    other = client.session(session.id)
    assert other.state_etag is None  # a handle made from an id alone has seen nothing
    with pytest.raises(engram.PreconditionFailed) as refused:
        other.update(state={"stage": "browsing"}, if_match=first)
    _assert_stale(refused, session.state_etag)
    assert other.state_etag is None  # a refusal is not a read: read again to retry
    other.get()
    assert other.state_etag == session.state_etag
    assert _recorded(session.id) == ({"stage": "cart"}, 1, 0)  # only the first update's turn


def test_turns_take_if_match_and_a_stale_one_records_nothing(
    live_server: Any, live_key: IssuedKey
) -> None:
    client = engram.Engram(live_server.url, live_key.secret, max_retries=0)
    session = client.create_session(user_id="u", agent_id="a", state={"n": 0})
    stale = session.state_etag
    answer = session.record_turn(steps=[STEP], state={"n": 1}, if_match=stale)
    assert answer["session"]["state_etag"] == session.state_etag == state_etag({"n": 1})

    with pytest.raises(engram.PreconditionFailed) as refused:
        client.record_turn(session.id, steps=[STEP], state={"n": 2}, if_match=stale)
    _assert_stale(refused, session.state_etag)
    ran = []
    with pytest.raises(engram.PreconditionFailed), session.turn("hi", if_match=stale) as turn:
        ran.append(True)  # the block runs; the turn is refused when recorded on exit
        turn.add_step("response", model="gpt-4o-mini", input_tokens=10, output_tokens=1)
    assert ran == [True]
    assert _recorded(session.id) == ({"n": 1}, 1, 1)

    with session.turn("hi", if_match=session.state_etag, state={"n": 3}) as turn:
        turn.add_step("response", model="gpt-4o-mini", input_tokens=10, output_tokens=1)
    assert turn.result["session"]["state_etag"] == session.state_etag == state_etag({"n": 3})
    assert _recorded(session.id) == ({"n": 3}, 2, 2)


def test_the_async_client_takes_if_match_as_well(live_server: Any, live_key: IssuedKey) -> None:
    async def main() -> tuple[str, str]:
        async with engram.AsyncEngram(live_server.url, live_key.secret, max_retries=0) as client:
            session = await client.create_session(user_id="u", agent_id="a", state={"n": 0})
            stale = session.state_etag
            await session.update(state={"n": 1}, if_match=stale)
            with pytest.raises(engram.PreconditionFailed):
                async with session.turn("hi", if_match=stale, state={"n": 9}):
                    pass
            async with session.turn("hi", if_match=session.state_etag, state={"n": 2}):
                pass
            return session.id, str(session.state_etag)

    sid, etag = asyncio.run(main())
    assert etag == state_etag({"n": 2})
    assert _recorded(sid) == ({"n": 2}, 2, 0)  # the update's state_change and one turn


def test_a_background_client_sends_if_match_and_keeps_a_stale_ones_refusal(
    live_server: Any, live_key: IssuedKey
) -> None:
    """Queued with `if_match`, a turn is checked against the state the turns queued
    before it left: with the current tag it is recorded; with a stale one nothing is,
    and its `PreconditionFailed` (412, the current tag) is in `background.failed`, as the
    background client keeps any refusal."""
    with engram.Engram(
        live_server.url, live_key.secret, background=True, flush_interval=0.05, max_retries=0
    ) as client:
        session = client.create_session(user_id="u", agent_id="a", state={"n": 0})
        first = session.state_etag
        assert session.record_turn(steps=[STEP], state={"n": 1}, if_match=first) is None
        assert session.record_turn(steps=[STEP], state={"n": 2}) is None
        with session.turn("hi", if_match=first, state={"n": 9}) as turn:  # stale by now
            turn.add_step("response", model="gpt-4o-mini", input_tokens=10, output_tokens=1)
        client.record_turn(session.id, steps=[STEP], state={"n": 3}, if_match=state_etag({"n": 2}))
        client.flush(timeout=30)
        sender = client.background
        assert sender is not None and sender.dropped == 0
        [(item, error)] = sender.failed
    assert item.if_match == first and item.body["state"] == {"n": 9}
    assert isinstance(error, engram.PreconditionFailed) and error.status == 412
    assert error.code == "precondition_failed" and error.state_etag == state_etag({"n": 2})
    assert _recorded(session.id) == ({"n": 3}, 3, 3)


BIG_STEP = {"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 900,
            "output_tokens": 100}  # fmt: skip


def test_a_handle_follows_a_rotation_into_the_successor_with_its_tag(
    live_server: Any, live_key: IssuedKey
) -> None:
    client = engram.Engram(live_server.url, live_key.secret, max_retries=0)
    session = client.create_session(user_id="u", agent_id="a", state={"n": 0})
    first = session.id
    session.update(rotate_after_tokens=500, if_match=session.state_etag)
    session.record_turn(steps=[BIG_STEP], state={"n": 1}, if_match=session.state_etag)

    # The session passed its threshold: this turn opens the successor and is its turn 1.
    answer = session.record_turn(steps=[STEP], state={"n": 2}, if_match=session.state_etag)
    successor = answer["session"]
    assert successor["previous_session_id"] == first != successor["id"]
    assert session.id == successor["id"]
    assert session.state_etag == successor["state_etag"] == state_etag({"n": 2})

    # The next conditional writes go to the successor, with the tag the handle holds,
    # without reading the session again.
    with session.turn("hi", if_match=session.state_etag, state={"n": 3}) as turn:
        turn.add_step("response", model="gpt-4o-mini", input_tokens=10, output_tokens=1)
    assert session.state_etag == state_etag({"n": 3})
    session.update(state={"n": 4}, if_match=session.state_etag)
    assert (
        session.state_etag == state_etag({"n": 4}) == client.get_session(session.id)["state_etag"]
    )
    assert _recorded(session.id) == ({"n": 4}, 3, 2)  # two turns and the update's
    assert _recorded(first) == ({"n": 1}, 1, 1)  # its one turn
    assert ChatSession.objects.get(pk=first).status == "archived"


def test_an_async_handle_follows_a_rotation_too(live_server: Any, live_key: IssuedKey) -> None:
    async def main() -> tuple[str, str, str]:
        async with engram.AsyncEngram(live_server.url, live_key.secret, max_retries=0) as client:
            session = await client.create_session(user_id="u", agent_id="a", state={"n": 0})
            first = session.id
            await session.update(rotate_after_tokens=500)
            await session.record_turn(steps=[BIG_STEP], if_match=session.state_etag)
            async with session.turn("hi", if_match=session.state_etag, state={"n": 1}) as turn:
                turn.add_step("response", model="gpt-4o-mini", input_tokens=10, output_tokens=1)
            await session.record_turn(steps=[STEP], state={"n": 2}, if_match=session.state_etag)
            return first, session.id, str(session.state_etag)

    first, now, etag = asyncio.run(main())
    assert now != first and ChatSession.objects.get(pk=now).previous_session_id == uuid.UUID(first)
    assert etag == state_etag({"n": 2}) and _recorded(now) == ({"n": 2}, 2, 2)


def test_a_rollback_through_the_handle_moves_its_tag(live_server: Any, live_key: IssuedKey) -> None:
    client = engram.Engram(live_server.url, live_key.secret, max_retries=0)
    session = client.create_session(user_id="u", agent_id="a", state={"n": 0})
    session.record_turn(steps=[STEP], state={"n": 1}, if_match=session.state_etag)
    session.record_turn(steps=[STEP], state={"n": 2}, if_match=session.state_etag)
    session.rollback_turn(2)
    assert session.state_etag == state_etag({"n": 1})
    session.update(state={"n": 5}, if_match=session.state_etag)
    assert ChatSession.objects.get(pk=session.id).state == {"n": 5}
