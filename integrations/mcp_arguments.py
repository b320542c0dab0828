"""Argument types shared by the MCP tool modules (integrations.mcp_server and its
tool groups).

A tool takes only the arguments it declares, and an object argument only the fields its
model declares: anything else is refused (`invalid`, naming it), as the REST API refuses
an unknown field, since an ignored misspelling (`limitt`, `from` for `start`) would run
the call with a default the caller did not choose. `strict_arguments` holds the SDK's
model of a tool's arguments to that; `ToolArgumentModel` is the base of object
arguments."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

SessionId = Annotated[str, Field(description="The session's id, as session_open returned it.")]
# A user's, agent's or conversation's id, within the REST API's limits.
Identifier = Annotated[str, Field(min_length=1, max_length=255)]

# `call(mcp_tools.fn, **arguments)`: runs fn for the server's tenant, a ToolError on refusal.
BoundCall = Callable[..., dict[str, Any]]

M = TypeVar("M", bound=BaseModel)


class ToolArgumentModel(BaseModel):
    """An object a tool takes as an argument (a turn's step, a result item...)."""

    model_config = ConfigDict(extra="forbid")


def strict_arguments(model: type[M]) -> type[M]:
    """`model` (the SDK's model of a tool's arguments), refusing arguments it does not
    declare; its JSON schema then says `additionalProperties: false`."""
    config = ConfigDict(extra="forbid")
    return type(model.__name__, (model,), {"model_config": config, "__module__": model.__module__})
