"""How a refused tool call reaches the MCP client: an `isError` result whose text is the
JSON `{"code", "message", "fields"}` of the REST API's error body, and whose
`structuredContent` is the same object, whether the SDK refused the arguments against
the tool's input schema (code `invalid`, the fields named by their path, e.g.
`steps.0.step_type`; an argument the tool does not take is "Unknown argument.", a field
an object argument does not take "Unknown field.", as REST says of a body's), Engram
refused the call (`mcp_tools.ToolCallError`: the code, message and fields the REST
route would answer, with every further member the REST error body has, e.g.
`successor_session_id` of a rotated session's `session_expired`, `state_etag` of a
`precondition_failed`), or no tool has the name called (`not_found`, as an unknown route
answers, naming `name`).

The SDK alone would answer `Error executing tool <name>: ` followed by pydantic's own
text (the rejected input and an errors.pydantic.dev link) or by our JSON, and
`Unknown tool: <name>` as plain text, none of which a client can parse as JSON. A crash
inside a tool keeps the SDK's generic answer."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, InputRequiredResult, TextContent
from pydantic import ValidationError

from integrations.mcp_tools import ToolCallError
from sessions_app.errors import ErrorCode

INVALID_ARGUMENTS = "Invalid arguments."
UNKNOWN_ARGUMENT = "Unknown argument."
UNKNOWN_FIELD = "Unknown field."


def argument_error(exc: ValidationError, *, tool: str, takes: Sequence[str]) -> dict[str, Any]:
    """A pydantic validation error of a tool's arguments, as the API's error body: each
    message under its field's dotted path, without the rejected value. When an argument
    is unknown, the message also says what the tool takes, to correct the call from."""
    fields: dict[str, list[str]] = {}
    unknown: list[str] = []
    for error in exc.errors(include_url=False, include_input=False):
        path = ".".join(str(part) for part in error["loc"]) or "non_field_errors"
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = UNKNOWN_ARGUMENT if len(error["loc"]) == 1 else UNKNOWN_FIELD
            if len(error["loc"]) == 1:
                unknown.append(path)
        fields.setdefault(path, []).append(message)
    summary = INVALID_ARGUMENTS
    if unknown:
        summary = (
            f"Invalid arguments: {tool} takes no {', '.join(unknown)}; "
            f"it takes {', '.join(takes) or 'no arguments'}."
        )
    return {"code": ErrorCode.INVALID.value, "message": summary, "fields": fields}


def engram_error(exc: BaseException, *, tool: str, takes: Sequence[str]) -> dict[str, Any] | None:
    """The API error body behind a `ToolError` the SDK raised for `tool`, or None for a
    crash (`UnexpectedToolError`) or an error of the SDK's own."""
    if isinstance(exc, UnexpectedToolError):
        return None
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ToolCallError):
            return cause.body
        if isinstance(cause, ValidationError):
            return argument_error(cause, tool=tool, takes=takes)
        cause = cause.__cause__
    return None


def _error_result(body: dict[str, Any]) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(body))],
        structured_content=body,
        is_error=True,
    )


class EngramMCPServer(MCPServer):
    """The SDK's server, serving tools built beforehand (`mcp_tool_registry`: each held
    to the arguments it declares) and answering refused calls in the API's error shape."""

    def __init__(self, *args: Any, tools: list[Tool], **kwargs: Any) -> None:
        super().__init__(*args, tools=tools, **kwargs)
        self._tools_by_name = {tool.name: tool for tool in tools}

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        tool = self._tools_by_name.get(name)
        if tool is None:
            names = ", ".join(self._tools_by_name)
            return _error_result(
                {
                    "code": ErrorCode.NOT_FOUND.value,
                    "message": f"Unknown tool: {name}. The tools are: {names}.",
                    "fields": {"name": ["Unknown tool."]},
                }
            )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            body = engram_error(exc, tool=name, takes=list(tool.parameters.get("properties", {})))
            if body is None:
                raise
            return _error_result(body)
