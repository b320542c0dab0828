"""The MCP tools, built before the server that serves them.

The SDK builds a tool from its function when a server registers it (`Tool.from_function`:
the model of its arguments and its input schema), and its server offers no public way
to change a tool once registered; its constructor takes tools built beforehand. So
Engram's tool groups register on a `ToolRegistry`, which builds each tool the SDK's way,
holds its arguments to those it declares (`mcp_arguments.strict_arguments`) and
regenerates its input schema from that model, so that the schema a client lists says
`additionalProperties: false` as the check does. `build_server` hands the tools to the
server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server.mcpserver.tools import Tool

from integrations.mcp_arguments import strict_arguments

F = TypeVar("F", bound=Callable[..., Any])


class ToolRegistry:
    """Tools by name, each built from its function and held to its declared arguments."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}

    def tool(self, name: str | None = None, **options: Any) -> Callable[[F], F]:
        """A decorator registering its function as a tool: the SDK server's `tool()`
        (name, title, description, annotations, icons, meta, structured_output)."""

        def register(fn: F) -> F:
            self.add(fn, name=name, **options)
            return fn

        return register

    def add(self, fn: Callable[..., Any], **options: Any) -> Tool:
        """`fn` as a tool with strict arguments. A second tool of one name is an error
        (the SDK would keep the first and log a warning)."""
        tool = Tool.from_function(fn, **options)
        if tool.name in self.tools:
            raise ValueError(f"Two MCP tools are named {tool.name}.")
        metadata = tool.fn_metadata
        metadata.arg_model = strict_arguments(metadata.arg_model)
        tool.parameters = metadata.arg_model.model_json_schema(by_alias=True)
        self.tools[tool.name] = tool
        return tool
