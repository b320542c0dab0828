"""What the fake LLM provider answers with: the bodies and stream events of the OpenAI
Responses and Anthropic Messages protocols, built from the token counts of a call."""

from __future__ import annotations

import time
from typing import Any

ANSWER = "The Acer Aspire 5 is the cheapest at $549."

Events = list[tuple[str | None, Any]]  # (SSE event name, data) in order


def responses_object(model: str, tin: int, tout: int, cached: int, reasoning: int) -> dict:
    """A completed OpenAI Responses object answering ANSWER."""
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": int(time.time()),
        "model": model,
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": tin,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": tout,
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": tin + tout,
        },
    }


def responses_events(response: dict[str, Any]) -> Events:
    """`response` streamed: created, one text delta per word, completed."""
    created = {**response, "status": "in_progress", "output": [], "usage": None}
    events: Events = [
        (
            "response.created",
            {"type": "response.created", "sequence_number": 0, "response": created},
        )
    ]
    for n, word in enumerate(ANSWER.split(" "), start=1):
        events.append(
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "sequence_number": n,
                    "item_id": "msg_1",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": word + " ",
                    "logprobs": [],
                },
            )
        )
    events.append(
        (
            "response.completed",
            {"type": "response.completed", "sequence_number": 99, "response": response},
        )
    )
    return events


def anthropic_message(model: str, usage: dict[str, int]) -> dict[str, Any]:
    """An Anthropic message answering ANSWER, with `usage`."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": ANSWER}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }


def anthropic_events(message: dict[str, Any], usage: dict[str, int], tout: int) -> Events:
    """`message` streamed: its start, one text delta per word, the stop with `tout`
    output tokens."""
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: Events = [
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    for word in ANSWER.split(" "):
        events.append(
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": word + " "},
                },
            )
        )
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": tout},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events
