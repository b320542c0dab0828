"""Helpers for the window tests: sessions and turns through our own services, and a
loopback chat-completions server standing in for an LLM provider."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench.synthetic_sessions import SyntheticTurn
from sessions_app.models import ChatSession, Tenant
from sessions_app.services.sessions import session_create
from sessions_app.services.turn_recording import turn_record
from sessions_app.services.turn_totals import StepInput
from sessions_app.usage import TokenCounts


def new_session(tenant: Tenant, **fields: Any) -> ChatSession:
    return session_create(tenant=tenant, user_id="u1", agent_id="shop", **fields)


def record(
    tenant: Tenant,
    session: ChatSession,
    user: str,
    assistant: str,
    *,
    failed_error: str | None = None,
    intent: dict[str, Any] | None = None,
) -> int:
    step = StepInput(
        step_type="response",
        model="gpt-4o-mini",
        counts=TokenCounts(input_tokens=900, output_tokens=120),
        success=failed_error is None,
        error=failed_error,
    )
    return turn_record(
        tenant=tenant,
        session_id=session.pk,
        steps=[step],
        user_message=user,
        assistant_response=assistant,
        intent_data=intent,
    ).turn.turn_number


def record_synthetic(
    tenant: Tenant, session: ChatSession, turns: list[SyntheticTurn], capture: Any = None
) -> None:
    """Record turns; with `capture` (django_capture_on_commit_callbacks) the after-commit
    hooks run as they would in production: the receiver enqueues compaction when due."""
    for turn in turns:
        if capture is None:
            record(tenant, session, turn.user_message, turn.assistant_response)
        else:
            with capture(execute=True):
                record(tenant, session, turn.user_message, turn.assistant_response)


@dataclass
class FakeLLM:
    """Answers chat completions from a loopback HTTP server (no mock of our code)."""

    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)


@contextmanager
def loopback_llm(reply: str, *, status: int = 200) -> Iterator[FakeLLM]:
    calls: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            calls.append({"path": self.path, "body": body, "auth": self.headers["Authorization"]})
            payload = json.dumps(
                {
                    "id": "cmpl-1",
                    "model": body["model"],
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}}],
                    "usage": {"prompt_tokens": 321, "completion_tokens": 45, "total_tokens": 366},
                }
            ).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield FakeLLM(url=f"http://127.0.0.1:{server.server_port}/v1", requests=calls)
    finally:
        server.shutdown()
        server.server_close()
