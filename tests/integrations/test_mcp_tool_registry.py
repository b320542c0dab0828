"""The registry the MCP tools are built on before the server (`mcp_tool_registry`):
each tool is the SDK's, held to its declared arguments, and one name is one tool."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from integrations.mcp_tool_registry import ToolRegistry


def _echo(text: str, times: int = 1) -> dict[str, str]:
    return {"text": text * times}


def test_a_tool_refuses_what_its_function_does_not_take() -> None:
    registry = ToolRegistry()
    registry.tool(description="Echo.")(_echo)
    tool = registry.tools["_echo"]
    assert tool.parameters["additionalProperties"] is False
    assert set(tool.parameters["properties"]) == {"text", "times"}
    assert tool.fn_metadata.arg_model.model_validate({"text": "a"}).times == 1
    with pytest.raises(ValidationError) as refused:
        tool.fn_metadata.arg_model.model_validate({"text": "a", "timez": 2})
    assert refused.value.errors()[0]["type"] == "extra_forbidden"


def test_one_name_is_one_tool() -> None:
    registry = ToolRegistry()
    registry.tool(name="echo")(_echo)
    with pytest.raises(ValueError, match="echo"):
        registry.add(_echo, name="echo")
    assert list(registry.tools) == ["echo"]
