"""What the OTLP tests send: GenAI spans emitted through the OpenTelemetry SDK, the
token counts they carry, and an OTLP/JSON export body written by hand."""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import Status, StatusCode

CALLS = [
    # (conversation, model, input, output, cached, reasoning, failed)
    ("conv-a", "gpt-4o-mini", 1200, 300, 400, 0, False),
    ("conv-a", "gpt-4o", 800, 150, 0, 64, False),
    ("conv-a", "claude-sonnet-4-5", 500, 0, 0, 0, True),
    ("conv-b", "gpt-4o-mini", 90, 10, 0, 0, False),
]


def emit(tracer: Any) -> None:
    """Per conversation one trace: an invoke_agent span around chat and tool spans, plus
    an HTTP span that is not GenAI, and a trace without a conversation id."""
    for conversation in ("conv-a", "conv-b"):
        with tracer.start_as_current_span("invoke_agent shop") as agent:
            agent.set_attribute("gen_ai.operation.name", "invoke_agent")
            agent.set_attribute("gen_ai.agent.name", "shop-agent")
            agent.set_attribute("gen_ai.conversation.id", conversation)
            agent.set_attribute("user.id", "maria")
            # An instrumentation's roll-up of its children: must not be counted again.
            agent.set_attribute("gen_ai.usage.input_tokens", 99_999)
            for conv, model, tin, tout, cached, reasoning, failed in CALLS:
                if conv != conversation:
                    continue
                with tracer.start_as_current_span(f"chat {model}") as span:
                    span.set_attribute("gen_ai.operation.name", "chat")
                    span.set_attribute("gen_ai.request.model", model)
                    span.set_attribute("gen_ai.response.model", model + "-2024")
                    span.set_attribute("gen_ai.usage.input_tokens", tin)
                    span.set_attribute("gen_ai.usage.output_tokens", tout)
                    if cached:
                        span.set_attribute("gen_ai.usage.cache_read.input_tokens", cached)
                    if reasoning:
                        span.set_attribute("gen_ai.usage.reasoning.output_tokens", reasoning)
                    if failed:
                        span.set_attribute("error.type", "overloaded")
                        span.set_status(Status(StatusCode.ERROR, "529 overloaded"))
            with tracer.start_as_current_span("execute_tool search") as tool:
                tool.set_attribute("gen_ai.operation.name", "execute_tool")
                tool.set_attribute("gen_ai.tool.name", "search")
            with tracer.start_as_current_span("GET /inventory"):
                pass
    with tracer.start_as_current_span("chat orphan") as orphan:
        orphan.set_attribute("gen_ai.operation.name", "chat")
        orphan.set_attribute("gen_ai.request.model", "gpt-4o-mini")
        orphan.set_attribute("gen_ai.usage.input_tokens", 5)
        orphan.set_attribute("gen_ai.usage.output_tokens", 5)


def expected() -> dict[str, int]:
    return {
        "input_tokens": sum(c[2] for c in CALLS),
        "output_tokens": sum(c[3] for c in CALLS),
        "cached_tokens": sum(c[4] for c in CALLS),
        "reasoning_tokens": sum(c[5] for c in CALLS),
    }


def otlp_json(trace_id: str, span_id: str, input_tokens: int) -> dict[str, Any]:
    attrs = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.conversation.id", "value": {"stringValue": "json-conv"}},
        {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o-mini"}},
        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": str(input_tokens)}},
        {"key": "gen_ai.usage.output_tokens", "value": {"intValue": "7"}},
    ]
    span = {
        "traceId": trace_id, "spanId": span_id, "name": "chat gpt-4o-mini", "kind": 3,
        "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000000250000000",
        "attributes": attrs, "status": {},
    }  # fmt: skip
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "js-agent"}}]}
    return {
        "resourceSpans": [
            {"resource": resource, "scopeSpans": [{"scope": {"name": "t"}, "spans": [span]}]}
        ]
    }
