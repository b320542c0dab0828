"""Argument types shared by the MCP tool modules (integrations.mcp_server and its
tool groups)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

SessionId = Annotated[str, Field(description="The session's id, as session_open returned it.")]
# A user's, agent's or conversation's id, within the REST API's limits.
Identifier = Annotated[str, Field(min_length=1, max_length=255)]

# `call(mcp_tools.fn, **arguments)`: runs fn for the server's tenant, a ToolError on refusal.
BoundCall = Callable[..., dict[str, Any]]
