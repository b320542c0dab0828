"""`turn.track` reads a provider response's usage whatever object carries it: a dict, a
pydantic model, a dataclass, a SimpleNamespace or a class with the usual attributes; a
response with no readable usage is recorded with 0 tokens and logged as a warning."""

from __future__ import annotations

import dataclasses
import json
import logging
from types import SimpleNamespace
from typing import Any

import engram
import pytest
from engram import step_from_response

from sessions_app.services.api_keys import IssuedKey
from tests.integrations.provider_payloads import anthropic_message, responses_object

RESPONSES = responses_object("gpt-4o", tin=120, tout=40, cached=30, reasoning=10)
ANTHROPIC = anthropic_message(
    "claude-haiku-4-5",
    {
        "input_tokens": 50,
        "cache_read_input_tokens": 20,
        "cache_creation_input_tokens": 8,
        "output_tokens": 12,
    },
)
CHAT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-4o-mini",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}}],
    "usage": {
        "prompt_tokens": 90,
        "completion_tokens": 25,
        "total_tokens": 115,
        "prompt_tokens_details": {"cached_tokens": 10},
        "completion_tokens_details": {"reasoning_tokens": 5},
    },
}
PAYLOADS = {"openai_responses": RESPONSES, "anthropic": ANTHROPIC, "openai_chat": CHAT}


def namespace(value: Any) -> Any:
    """A JSON payload as nested SimpleNamespaces (attribute access all the way down)."""
    return json.loads(json.dumps(value), object_hook=lambda d: SimpleNamespace(**d))


@dataclasses.dataclass
class TokenDetails:
    cached_tokens: int = 0


@dataclasses.dataclass
class DataclassUsage:
    """Another client's usage as a dataclass (Responses shape)."""

    input_tokens: int
    output_tokens: int
    input_tokens_details: TokenDetails
    total_tokens: int | None = None


class SlottedUsage:
    """A usage object with `__slots__` and no `__dict__` (Chat Completions shape)."""

    __slots__ = ("completion_tokens", "prompt_tokens")

    def __init__(self, prompt_tokens: int, completion_tokens: int) -> None:
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens


@pytest.mark.parametrize("provider", sorted(PAYLOADS))
def test_a_namespace_response_gives_the_same_step_as_its_dict(provider: str) -> None:
    payload = PAYLOADS[provider]
    as_dict = step_from_response(payload)
    as_namespace = step_from_response(namespace(payload))
    assert as_namespace == as_dict
    assert as_namespace["usage"] == payload["usage"]
    assert as_namespace["model"] == payload["model"]


def test_dataclass_and_slotted_usage_objects_are_read() -> None:
    dataclass_usage = DataclassUsage(
        input_tokens=70, output_tokens=9, input_tokens_details=TokenDetails(cached_tokens=4)
    )
    step = step_from_response(SimpleNamespace(model="m", usage=dataclass_usage))
    assert step["usage"] == {
        "input_tokens": 70,
        "output_tokens": 9,
        "input_tokens_details": {"cached_tokens": 4},
    }
    step = step_from_response(SimpleNamespace(model="m", usage=SlottedUsage(33, 7)))
    assert step["usage"] == {"prompt_tokens": 33, "completion_tokens": 7}


@pytest.mark.parametrize(
    "response",
    [SimpleNamespace(model="m"), SimpleNamespace(model="m", usage=object()), {"model": "m"}],
    ids=["no usage", "usage without counts", "dict without usage"],
)
def test_a_response_without_readable_usage_warns(
    response: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="engram"):
        step = step_from_response(response)
    assert step["input_tokens"] == 0 and step["output_tokens"] == 0 and "usage" not in step
    assert "no readable usage" in caplog.text and "0 tokens" in caplog.text


def test_a_step_block_without_a_response_does_not_warn(caplog: pytest.LogCaptureFixture) -> None:
    turn = engram.Turn("00000000-0000-0000-0000-000000000000", user_message="q")
    with caplog.at_level(logging.WARNING, logger="engram"), turn.step("search"):
        pass  # a tool call: no LLM response to read
    assert turn.steps[0]["input_tokens"] == 0 and caplog.text == ""


def test_tracked_namespace_responses_count_in_the_session_totals(
    live_server: Any, live_key: IssuedKey
) -> None:
    client = engram.Engram(live_server.url, live_key.secret)
    session = client.create_session(user_id="u", agent_id="a")
    with session.turn(user_message="Which is cheapest?") as turn:
        for provider in sorted(PAYLOADS):
            turn.track(namespace(PAYLOADS[provider]), step_type=provider)
    totals = session.get()["totals"]
    # Chat 90 + Responses 120 + Anthropic 50 + 20 read + 8 written; outputs 25 + 40 + 12.
    assert totals["input_tokens"] == 90 + 120 + 78
    assert totals["output_tokens"] == 25 + 40 + 12
    assert totals["cached_tokens"] == 10 + 30 + 20
    assert totals["reasoning_tokens"] == 5 + 10
