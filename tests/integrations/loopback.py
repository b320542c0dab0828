"""Loopback HTTP servers for the parts we do not run: an LLM provider that speaks the
OpenAI (Chat Completions, Responses) and Anthropic Messages protocols, streaming
included, and a proxy that drops chosen responses on the floor. Real sockets, real HTTP:
the official client libraries talk to them as they would to the providers."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from tests.integrations.provider_payloads import (
    ANSWER,
    anthropic_events,
    anthropic_message,
    responses_events,
    responses_object,
)


@dataclass
class Served:
    """One answered call: what the fake provider reported, so tests can add it up."""

    protocol: str
    model: str
    input_tokens: int  # Engram's convention: cached included
    output_tokens: int  # reasoning included
    cached_tokens: int
    reasoning_tokens: int
    stream: bool


@dataclass
class FakeLLM:
    url: str
    served: list[Served] = field(default_factory=list)
    # What the chat completion answers, from the request body (default: ANSWER); set it
    # to make the fake an extractor, a summariser or a broken model.
    chat_reply: Callable[[dict[str, Any]], str] | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)  # path, headers, body

    def totals(self) -> dict[str, int]:
        return {
            "input_tokens": sum(s.input_tokens for s in self.served),
            "output_tokens": sum(s.output_tokens for s in self.served),
            "cached_tokens": sum(s.cached_tokens for s in self.served),
            "reasoning_tokens": sum(s.reasoning_tokens for s in self.served),
        }


def _counts(body: dict[str, Any]) -> tuple[int, int, int, int]:
    """Deterministic but request-dependent counts: input grows with the prompt."""
    size = len(json.dumps(body.get("messages") or body.get("input") or ""))
    input_tokens = 100 + size
    cached = 32 if size % 2 == 0 else 16
    output = 20 + size % 7
    reasoning = 3
    return input_tokens, output, cached, reasoning


def _sse(handler: BaseHTTPRequestHandler, events: list[tuple[str | None, Any]]) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.end_headers()
    for name, data in events:
        chunk = ""
        if name:
            chunk += f"event: {name}\n"
        chunk += f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
        handler.wfile.write(chunk.encode())
        handler.wfile.flush()


def _json(handler: BaseHTTPRequestHandler, status: int, data: Any) -> None:
    raw = json.dumps(data).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)


def _chat(handler: BaseHTTPRequestHandler, body: dict[str, Any], fake: FakeLLM) -> None:
    model = body["model"]
    tin, tout, cached, reasoning = _counts(body)
    usage = {
        "prompt_tokens": tin,
        "completion_tokens": tout,
        "total_tokens": tin + tout,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }
    base = {"id": "chatcmpl-1", "created": int(time.time()), "model": model}
    stream = bool(body.get("stream"))
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    fake.served.append(
        Served(
            "openai_chat", model,
            tin if not stream or include_usage else 0,
            tout if not stream or include_usage else 0,
            cached if not stream or include_usage else 0,
            reasoning if not stream or include_usage else 0,
            stream,
        )
    )  # fmt: skip
    if not stream:
        content = fake.chat_reply(body) if fake.chat_reply else ANSWER
        message = {"role": "assistant", "content": content}
        choice = {"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}
        _json(
            handler, 200, {**base, "object": "chat.completion", "choices": [choice], "usage": usage}
        )
        return
    chunk = {**base, "object": "chat.completion.chunk"}
    events: list[tuple[str | None, Any]] = []
    for word in ANSWER.split(" "):
        delta = {"index": 0, "delta": {"content": word + " "}, "finish_reason": None}
        events.append((None, {**chunk, "choices": [delta]}))
    events.append(
        (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    )
    if include_usage:
        events.append((None, {**chunk, "choices": [], "usage": usage}))
    events.append((None, "[DONE]"))
    _sse(handler, events)


def _responses(handler: BaseHTTPRequestHandler, body: dict[str, Any], fake: FakeLLM) -> None:
    model = body["model"]
    tin, tout, cached, reasoning = _counts(body)
    stream = bool(body.get("stream"))
    fake.served.append(Served("openai_responses", model, tin, tout, cached, reasoning, stream))
    response = responses_object(model, tin, tout, cached, reasoning)
    if not stream:
        _json(handler, 200, response)
        return
    _sse(handler, responses_events(response))


def _messages(handler: BaseHTTPRequestHandler, body: dict[str, Any], fake: FakeLLM) -> None:
    model = body["model"]
    tin, tout, cached, _ = _counts(body)
    written = 8
    stream = bool(body.get("stream"))
    # Anthropic reports input after the last cache breakpoint; reads and writes beside it.
    fake.served.append(Served("anthropic", model, tin + cached + written, tout, cached, 0, stream))
    usage = {
        "input_tokens": tin,
        "output_tokens": tout,
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": written,
    }
    message = anthropic_message(model, usage)
    if not stream:
        _json(handler, 200, message)
        return
    _sse(handler, anthropic_events(message, usage, tout))


ROUTES: dict[str, Callable[[BaseHTTPRequestHandler, dict[str, Any], FakeLLM], None]] = {
    "/v1/chat/completions": _chat,
    "/v1/responses": _responses,
    "/v1/messages": _messages,
}


@contextmanager
def serve_fake_llm() -> Iterator[FakeLLM]:
    fake = FakeLLM(url="")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            fake.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            route = ROUTES.get(self.path)
            if route is None:
                _json(
                    self,
                    404,
                    {"error": {"message": "no such route", "type": "invalid_request_error"}},
                )
                return
            route(self, body, fake)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class DroppingProxy:
    url: str
    should_drop: Callable[[str, str], bool]
    dropped: list[str] = field(default_factory=list)
    forwarded: list[str] = field(default_factory=list)
    fail_with: Callable[[str, str], int | None] | None = None  # a status to answer instead
    failed: list[str] = field(default_factory=list)


def _incoming(handler: BaseHTTPRequestHandler) -> tuple[bytes, dict[str, str]]:
    """The request's body, and its headers but those of this hop."""
    length = int(handler.headers.get("Content-Length", 0))
    body = handler.rfile.read(length) if length else b""
    headers = {
        k: v
        for k, v in handler.headers.items()
        if k.lower() not in ("host", "content-length", "connection")
    }
    return body, headers


def _answer_injected(handler: BaseHTTPRequestHandler, status: int) -> None:
    """An error in the API's shape, with `Retry-After: 0`, as the server would send it."""
    code = {429: "rate_limited", 503: "dependency_unavailable"}.get(status, "invalid")
    _json_error = {"error": {"code": code, "message": "injected", "fields": {}}}
    raw = json.dumps(_json_error).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Retry-After", "0")
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)


def _relay(handler: BaseHTTPRequestHandler, upstream_response: httpx.Response) -> None:
    """The upstream answer, its body re-framed with a Content-Length of its own."""
    handler.send_response(upstream_response.status_code)
    for name, value in upstream_response.headers.items():
        if name.lower() not in (
            "content-length",
            "transfer-encoding",
            "connection",
            "content-encoding",
        ):
            handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(upstream_response.content)))
    handler.end_headers()
    handler.wfile.write(upstream_response.content)


@contextmanager
def serve_dropping_proxy(
    upstream: str,
    should_drop: Callable[[str, str], bool],
    fail_with: Callable[[str, str], int | None] | None = None,
) -> Iterator[DroppingProxy]:
    """Forwards every request to `upstream`; when `should_drop(method, path)` says so, the
    upstream answer is read and thrown away and the connection closed without a reply,
    as when a network blip eats a response after the server acted."""
    proxy = DroppingProxy(url="", should_drop=should_drop, fail_with=fail_with)
    client = httpx.Client(timeout=30)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _forward(self) -> None:
            body, headers = _incoming(self)
            status = proxy.fail_with(self.command, self.path) if proxy.fail_with else None
            if status is not None:  # answer for the server, without reaching it
                proxy.failed.append(f"{status} {self.command} {self.path}")
                _answer_injected(self, status)
                return
            upstream_response = client.request(
                self.command, upstream + self.path, content=body, headers=headers
            )
            proxy.forwarded.append(f"{self.command} {self.path}")
            if proxy.should_drop(self.command, self.path):
                proxy.dropped.append(f"{self.command} {self.path}")
                self.close_connection = True
                return  # no status line: the client sees the connection close
            _relay(self, upstream_response)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    proxy.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        server.shutdown()
        server.server_close()
        client.close()
