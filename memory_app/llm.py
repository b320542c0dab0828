"""The one client of an OpenAI-compatible chat endpoint (`{url}/chat/completions`), used
by abstractive summaries and LLM memory extraction alike.

Every call answers what it cost (model, tokens, duration), success or not, so that the
caller can record Engram's own LLM spend as a step (`engram.summarize`,
`engram.extract`) like any agent's. Any failure (network, HTTP status, malformed
answer) is one exception, `LLMError`, which carries the duration and model too; callers
fall back to their deterministic path.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class LLMEndpoint:
    url: str  # base URL, e.g. http://host/v1
    api_key: str
    model: str
    timeout: float

    @classmethod
    def from_settings(cls) -> LLMEndpoint | None:
        """The configured endpoint (ENGRAM_LLM_*), or None when none is configured."""
        from django.conf import settings

        if not settings.ENGRAM_LLM_URL:
            return None
        return cls(
            url=settings.ENGRAM_LLM_URL,
            api_key=settings.ENGRAM_LLM_API_KEY,
            model=settings.ENGRAM_LLM_MODEL,
            timeout=settings.ENGRAM_LLM_TIMEOUT_SECONDS,
        )


@dataclass(frozen=True)
class ChatCompletion:
    text: str
    model: str  # as the endpoint answered it, else as asked
    input_tokens: int
    output_tokens: int
    duration_ms: int
    usage_raw: dict[str, Any] = field(default_factory=dict)


class LLMError(Exception):
    """The call failed or its answer is unusable; `model`, `duration_ms` and the tokens
    say what it was and what it cost."""

    def __init__(
        self,
        message: str,
        *,
        model: str,
        duration_ms: int,
        input_tokens: int = 0,
        output_tokens: int = 0,
    ) -> None:
        super().__init__(message)
        self.model = model
        self.duration_ms = duration_ms
        self.input_tokens = input_tokens  # an unusable answer may still have been billed
        self.output_tokens = output_tokens


def chat_complete(
    endpoint: LLMEndpoint,
    messages: list[dict[str, str]],
    *,
    max_tokens: int | None = None,
    json_object: bool = False,
) -> ChatCompletion:
    """One chat completion at temperature 0; the answer's text must not be blank."""
    request = _chat_request(endpoint, messages, max_tokens=max_tokens, json_object=json_object)
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=endpoint.timeout) as response:  # noqa: S310
            payload = json.load(response)
        completion = _completion_of(payload, model=endpoint.model, started=started)
    except (OSError, urllib.error.URLError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise LLMError(
            f"{type(exc).__name__}: {exc}", model=endpoint.model, duration_ms=_ms_since(started)
        ) from exc
    if not completion.text:
        raise LLMError(
            "The LLM returned an empty answer.",
            model=completion.model,
            duration_ms=completion.duration_ms,
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
        )
    return completion


def _chat_request(
    endpoint: LLMEndpoint,
    messages: list[dict[str, str]],
    *,
    max_tokens: int | None,
    json_object: bool,
) -> urllib.request.Request:
    """The POST to `{url}/chat/completions`, with the API key as a bearer token if set."""
    body: dict[str, Any] = {"model": endpoint.model, "temperature": 0, "messages": messages}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if json_object:
        body["response_format"] = {"type": "json_object"}
    headers = {"Content-Type": "application/json"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    return urllib.request.Request(  # noqa: S310 - the URL is an operator setting
        f"{endpoint.url.rstrip('/')}/chat/completions",
        data=json.dumps(body).encode(),
        headers=headers,
    )


def _completion_of(payload: Any, *, model: str, started: float) -> ChatCompletion:
    """The answer's text, model (else `model`, the one asked) and usage, timed from
    `started`."""
    text = str(payload["choices"][0]["message"]["content"]).strip()
    usage = payload.get("usage") or {}
    return ChatCompletion(
        text=text,
        model=str(payload.get("model") or model),
        input_tokens=int(usage.get("prompt_tokens") or 0),
        output_tokens=int(usage.get("completion_tokens") or 0),
        duration_ms=_ms_since(started),
        usage_raw=usage if isinstance(usage, dict) else {},
    )


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
