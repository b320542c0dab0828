"""A real webhook receiver on loopback: an http.server in a thread that records every
request and answers with the statuses it is told to (200 once they run out)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> dict[str, Any]:
        return json.loads(self.body)


@dataclass
class WebhookReceiver:
    url: str
    requests: list[Received] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)


@contextmanager
def webhook_receiver() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            receiver.requests.append(Received(dict(self.headers.items()), body))
            status = receiver.statuses.pop(0) if receiver.statuses else 200
            self.send_response(status)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/engram"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
