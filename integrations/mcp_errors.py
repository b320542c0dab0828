"""How a refused tool call reaches the MCP client: an `isError` result whose text is the
JSON `{"code", "message", "fields"}` of the REST API's error body, and whose
`structuredContent` is the same object, whether the SDK refused the arguments against
the tool's input schema (code `invalid`, the fields named by their path, e.g.
`steps.0.step_type`) or Engram refused the call (`mcp_tools.ToolCallError`: the code,
message and fields the REST route would answer).

The SDK alone would answer `Error executing tool <name>: ` followed by pydantic's own
text (the rejected input and an errors.pydantic.dev link) or by our JSON, which a client
cannot parse as JSON. A crash inside a tool keeps the SDK's generic answer."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult, TextContent
from pydantic import ValidationError

from integrations.mcp_tools import ToolCallError

INVALID_ARGUMENTS = "Invalid arguments."


def argument_error(exc: ValidationError) -> dict[str, Any]:
    """A pydantic validation error of a tool's arguments, as the API's error body: each
    message under its field's dotted path, without the rejected value."""
    fields: dict[str, list[str]] = {}
    for error in exc.errors(include_url=False, include_input=False):
        path = ".".join(str(part) for part in error["loc"]) or "non_field_errors"
        fields.setdefault(path, []).append(error["msg"])
    return {"code": "invalid", "message": INVALID_ARGUMENTS, "fields": fields}


def engram_error(exc: BaseException) -> dict[str, Any] | None:
    """The API error body behind a `ToolError` the SDK raised, or None for a crash
    (`UnexpectedToolError`) or an error of the SDK's own (an unknown tool)."""
    if isinstance(exc, UnexpectedToolError):
        return None
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ToolCallError):
            return cause.body
        if isinstance(cause, ValidationError):
            return argument_error(cause)
        cause = cause.__cause__
    return None


class EngramMCPServer(MCPServer):
    """The SDK's server, answering refused calls in the API's error shape."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            body = engram_error(exc)
            if body is None:
                raise
            return CallToolResult(
                content=[TextContent(type="text", text=json.dumps(body))],
                structured_content=body,
                is_error=True,
            )
