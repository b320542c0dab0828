"""What the OpenAI and Anthropic SDKs' responses and stream events say: model, usage and
text. The provider's usage object is read as it is (sent as its own record, kept by
Engram as `usage_raw`); Engram normalises it (cached tokens inside input, reasoning inside
output), so the client does no token arithmetic of its own."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

Step = dict[str, Any]
log = logging.getLogger("engram")


# The usage fields of OpenAI (Chat Completions, Responses) and Anthropic, read by name
# from an object that is neither a mapping, a pydantic model, a dataclass nor has a
# `__dict__` (e.g. one with `__slots__` or properties).
USAGE_FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "prompt_tokens_details",
    "completion_tokens_details",
    "input_tokens",
    "output_tokens",
    "input_tokens_details",
    "output_tokens_details",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "cached_tokens",
    "reasoning_tokens",
)
_SCALARS = (bool, int, float, str)
_MAX_DEPTH = 4  # usage objects nest two levels (usage.prompt_tokens_details.cached_tokens)


def _as_dict(value: Any, depth: int = 0) -> dict[str, Any] | None:
    """`value` as a JSON object: a mapping, a pydantic model (`model_dump`), a dataclass,
    an object's public attributes (a SimpleNamespace, another client's class) or, failing
    those, its `USAGE_FIELDS`; None if none of them gives anything."""
    if value is None or isinstance(value, _SCALARS) or depth > _MAX_DEPTH:
        return None
    if isinstance(value, Mapping):
        items = dict(value)
    else:
        dump = getattr(value, "model_dump", None)
        if callable(dump):
            return dump(mode="json", exclude_none=True)  # type: ignore[no-any-return]  # an untyped third-party value
        items = _attributes(value)
    plain = {str(k): _plain(v, depth) for k, v in items.items() if not str(k).startswith("_")}
    return {k: v for k, v in plain.items() if v is not None} or None


def _attributes(value: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
    found = dict(getattr(value, "__dict__", None) or {})
    for name in USAGE_FIELDS:
        if name not in found:
            found[name] = getattr(value, name, None)
    return found


def _plain(value: Any, depth: int) -> Any:
    if value is None or isinstance(value, _SCALARS):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v, depth + 1) for v in value]
    return _as_dict(value, depth + 1)


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def step_from_response(
    response: Any,
    *,
    step_type: str = "llm",
    model: str | None = None,
    duration_ms: int = 0,
) -> Step:
    """A step from an OpenAI Chat Completion, an OpenAI Responses `Response` or an
    Anthropic `Message` (pydantic objects, dicts, dataclasses or any object with the
    same attributes): model, usage and duration. A response without a readable usage
    is recorded with 0 tokens, and logged as a warning on the `engram` logger."""
    usage = _as_dict(_get(response, "usage"))
    if not usage and response is not None:
        log.warning(
            "engram: no readable usage on the %s response (usage: %r); its step records 0 tokens",
            type(response).__name__,
            _get(response, "usage"),
        )
    return _step(step_type, str(model or _get(response, "model") or ""), usage, duration_ms)


def _step(step_type: str, model: str, usage: dict[str, Any] | None, duration_ms: int) -> Step:
    step: Step = {"step_type": step_type, "model": model, "duration_ms": max(0, int(duration_ms))}
    if usage:
        step["usage"] = usage
    else:
        step["input_tokens"] = 0
        step["output_tokens"] = 0
    return step


def _user_text(kwargs: dict[str, Any]) -> str:
    """The last user message, when it is plain text: the turn's `user_message`."""
    if isinstance(kwargs.get("input"), str):
        return str(kwargs["input"])
    for message in reversed(list(kwargs.get("messages") or [])):
        if _get(message, "role") == "user" and isinstance(_get(message, "content"), str):
            return str(_get(message, "content"))
    return ""


def _answer_text(response: Any) -> str:
    text = _get(response, "output_text")  # Responses API
    if isinstance(text, str):
        return text
    choices = _get(response, "choices")  # Chat Completions
    if choices:
        content = _get(_get(choices[0], "message"), "content")
        return content if isinstance(content, str) else ""
    parts = _get(response, "content")  # Anthropic Messages
    if isinstance(parts, list):
        return "".join(_get(p, "text") or "" for p in parts if _get(p, "type") == "text")
    return ""


class _StreamUsage:
    """Accumulates model, usage and text from a stream's events, per protocol."""

    def __init__(self, kind: str, model: str) -> None:
        self.kind = kind
        self.model = model
        self.usage: dict[str, Any] = {}
        self.text: list[str] = []

    def feed(self, event: Any) -> None:
        if self.kind == "openai_chat":
            self.model = _get(event, "model") or self.model
            usage = _as_dict(_get(event, "usage"))
            if usage:
                self.usage = usage  # the final chunk (stream_options.include_usage)
            for choice in _get(event, "choices") or []:
                delta = _get(choice, "delta")
                content = _get(delta, "content") if delta is not None else None
                if isinstance(content, str):
                    self.text.append(content)
        elif self.kind == "openai_responses":
            kind = _get(event, "type")
            if kind == "response.output_text.delta":
                self.text.append(_get(event, "delta") or "")
            elif kind in ("response.completed", "response.incomplete", "response.failed"):
                response = _get(event, "response")
                self.model = _get(response, "model") or self.model
                self.usage = _as_dict(_get(response, "usage")) or self.usage
        else:  # anthropic
            kind = _get(event, "type")
            if kind == "message_start":
                message = _get(event, "message")
                self.model = _get(message, "model") or self.model
                self.usage.update(_as_dict(_get(message, "usage")) or {})
            elif kind == "message_delta":
                # Cumulative counts: the delta's non-null fields replace the start's.
                self.usage.update(_as_dict(_get(event, "usage")) or {})
            elif kind == "content_block_delta":
                delta = _get(event, "delta")
                if _get(delta, "type") == "text_delta":
                    self.text.append(_get(delta, "text") or "")

    def step(self, step_type: str, duration_ms: int) -> Step:
        if not self.usage:
            log.warning(
                "engram: the %s stream of %r ended without usage; its step records 0 tokens",
                self.kind,
                self.model,
            )
        return _step(step_type, self.model, self.usage, duration_ms)
