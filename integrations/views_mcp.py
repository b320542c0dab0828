"""MCP over streamable HTTP at `/mcp/` (and `/mcp`), served by Django under WSGI.

The SDK's transport is ASGI. In its stateless JSON-response mode one HTTP POST is one
complete JSON-RPC exchange, so this view can drive it directly: DRF authenticates the
API key (same keys, same 401s as the REST API), the view builds that tenant's server and
hands the request to the SDK's session manager as an ASGI call inside a short-lived event
loop, and returns what the SDK answered. No session state outlives the request, so any
gunicorn worker can serve any call."""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from mcp.server.transport_security import TransportSecuritySettings
from rest_framework.exceptions import UnsupportedMediaType
from rest_framework.request import Request

from integrations.mcp_server import build_server
from integrations.request_schemas import MCP_MESSAGE
from integrations.views_otlp import FirstRendererNegotiation, RawBodyParser
from sessions_app.api.tenancy import TenantAPIView

if TYPE_CHECKING:
    from sessions_app.models import Tenant

# Django's ALLOWED_HOSTS already vets the Host header; the SDK's own check only knows
# loopback names by default.
_SECURITY = TransportSecuritySettings(enable_dns_rebinding_protection=False)


def _scope(request: Request) -> dict[str, Any]:
    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in request.headers.items()
    ]
    name, _, port = request.get_host().partition(":")
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


async def _serve(
    tenant: Tenant, scope: dict[str, Any], body: bytes
) -> tuple[int, list[Any], bytes]:
    server = build_server(tenant)
    server.streamable_http_app(
        json_response=True, stateless_http=True, transport_security=_SECURITY
    )
    manager = server.session_manager
    finished = asyncio.Event()
    body_sent = False
    status = 500
    headers: list[Any] = []
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal body_sent
        if not body_sent:
            body_sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await finished.wait()  # the client stays connected until the answer is out
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
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


class McpView(TenantAPIView):
    """MCP's streamable HTTP transport, stateless with JSON responses: POST only. There is
    no server-to-client stream and no session to end, so GET and DELETE answer 405 (as
    the MCP spec allows) from DRF, never reaching the SDK, which may wait on a GET for a
    stream that never comes."""

    parser_classes = [RawBodyParser]
    request_body_required = True
    content_negotiation_class = FirstRendererNegotiation

    def _handle(self, request: Request) -> HttpResponse:
        status, headers, body = asyncio.run(_serve(self.tenant, _scope(request), request.body))
        response = HttpResponse(body, status=status)
        for name, value in headers:
            key = name.decode("latin-1")
            if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                response[key] = value.decode("latin-1")
        return response

    @extend_schema(
        summary="MCP over streamable HTTP (stateless, JSON responses)",
        description=(
            "A JSON-RPC 2.0 message of the Model Context Protocol (initialize, tools/list, "
            "tools/call …) for the tenant of the API key. Tools: session_open, turn_record, "
            "memory_add, memory_search, context_get, results_store, resolve_reference, "
            "cart_add, cart_list, cart_remove, usage_report, budget_check. A refused tool "
            "call is an isError result whose text and structuredContent are the API's "
            "error {code, message, fields}. Point an MCP client's streamable HTTP "
            "transport here with `Authorization: Bearer <api key>`."
        ),
        request={"application/json": MCP_MESSAGE},
        responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="The JSON-RPC response."),
            202: OpenApiResponse(description="A notification was accepted."),
            400: OpenApiResponse(
                {
                    "type": "object",
                    "properties": {
                        "jsonrpc": {"type": "string"},
                        "id": {"nullable": True},
                        "error": {
                            "type": "object",
                            "properties": {
                                "code": {"type": "integer"},
                                "message": {"type": "string"},
                            },
                        },
                    },
                },
                description="Not a valid JSON-RPC message: MCP's own JSON-RPC error object.",
            ),
            401: OpenApiResponse(description="not_authenticated / authentication_failed"),
        },
    )
    def post(self, request: Request) -> HttpResponse:
        if not (request.content_type or "").startswith("application/json"):
            # The SDK would answer in text/plain; refuse in our documented error shape.
            raise UnsupportedMediaType(request.content_type or "")
        return self._handle(request)


@extend_schema(exclude=True)
class McpWithoutSlashView(McpView):
    """The same endpoint at `/mcp`: MCP clients are often configured without the slash,
    and a redirect would not do, since clients follow it as a GET (405). Documented once,
    at `/mcp/`."""
