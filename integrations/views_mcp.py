"""MCP over streamable HTTP at `/mcp/`, served by Django under WSGI.

The SDK's transport is ASGI. In its stateless JSON-response mode one HTTP POST is one
complete JSON-RPC exchange, so this view can drive it directly: it authenticates the key,
builds that tenant's server, hands the request to the SDK's session manager as an ASGI
call inside a short-lived event loop, and returns what the SDK answered. No session state
survives the request, so any gunicorn worker can serve any call."""

from __future__ import annotations

import asyncio
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from mcp.server.transport_security import TransportSecuritySettings

from integrations.auth import authenticate
from integrations.mcp_server import build_server
from sessions_app.models import Tenant

# Django's ALLOWED_HOSTS already vets the Host header; the SDK's own check only knows
# loopback names by default.
_SECURITY = TransportSecuritySettings(enable_dns_rebinding_protection=False)


def _scope(request: HttpRequest) -> dict[str, Any]:
    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in request.headers.items()
    ]
    host = request.get_host()
    name, _, port = host.partition(":")
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode(),
        "root_path": "",
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "headers": headers,
        "server": (name, int(port) if port.isdigit() else 80),
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
    }


async def _serve(tenant: Tenant, scope: dict[str, Any], body: bytes) -> tuple[int, list[Any], bytes]:
    server = build_server(tenant)
    server.streamable_http_app(
        json_response=True, stateless_http=True, transport_security=_SECURITY
    )
    manager = server.session_manager
    finished = asyncio.Event()
    sent_body = False
    status = 500
    headers: list[Any] = []
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await finished.wait()  # the client stays connected until the answer is out
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status = message["status"]
            headers = message.get("headers", [])
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                finished.set()

    async with manager.run():
        await manager.handle_request(scope, receive, send)
    finished.set()
    return status, headers, b"".join(chunks)


@csrf_exempt
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    tenant = authenticate(request)
    if not isinstance(tenant, Tenant):
        return tenant
    status, headers, body = asyncio.run(_serve(tenant, _scope(request), request.body))
    response = HttpResponse(body, status=status)
    for name, value in headers:
        key = name.decode("latin-1")
        if key.lower() not in ("content-length", "transfer-encoding", "connection"):
            response[key] = value.decode("latin-1")
    return response
