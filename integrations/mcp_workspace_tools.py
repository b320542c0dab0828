"""The MCP tools of a session's workspace: the results an agent stored (what references
resolve against), the cart, and the spend. Registered by integrations.mcp_server."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from pydantic import Field

from integrations import mcp_tools
from integrations.mcp_arguments import BoundCall, Identifier, SessionId, ToolArgumentModel
from integrations.mcp_tool_registry import ToolRegistry
from sessions_app.api.serializers_workspace import MAX_QUANTITY, MAX_RESULT_ITEMS


class ResultItem(ToolArgumentModel):
    """One item of a search's results (the REST API's result item, as a tool argument)."""

    mpn: str = Field(description="The item's id (MPN), unique within the session.")
    name: str = Field("", description="Display name ('Dell XPS 13').")
    component_type: str = Field("", description="What kind of item: laptop, ticket, ...")
    summary: str = Field("", description="A short description shown to the user.")
    data: dict[str, Any] = Field(
        default_factory=dict,
        description="The full record; numeric fields (price, weight...) power references "
        "such as 'the cheapest'.",
    )


def register_results_tools(tools: ToolRegistry, call: BoundCall) -> None:
    """results_store: what references and cart_add by `ref` resolve against."""

    @tools.tool(
        description="Store the results of a search you ran, in the order you show them "
        "to the user. resolve_reference and cart_add with `ref` ('the first one', 'the "
        "cheapest', 'the Dell') resolve against the latest results stored."
    )
    def results_store(
        session_id: SessionId,
        query: Annotated[str, Field(max_length=2000, description="The search as phrased.")],
        items: Annotated[list[ResultItem], Field(max_length=MAX_RESULT_ITEMS)],
        filters: Annotated[
            dict[str, Any] | None, Field(description="The search's structured filters.")
        ] = None,
    ) -> dict[str, Any]:
        return call(
            mcp_tools.results_store,
            session_id=session_id,
            query=query,
            items=[item.model_dump() for item in items],
            filters=filters,
        )


def register_workspace_tools(tools: ToolRegistry, call: BoundCall) -> None:
    """cart_add, cart_list, cart_remove and usage_report: the cart and the spend."""

    @tools.tool(
        description="Add an item to the session's cart, by its MPN or by a phrase "
        "('the cheapest'). Adding an item twice does nothing."
    )
    def cart_add(
        session_id: SessionId,
        mpn: Annotated[str | None, Field(max_length=255)] = None,
        ref: Annotated[str | None, Field(max_length=500)] = None,
        quantity: Annotated[int | None, Field(ge=1, le=MAX_QUANTITY)] = None,
    ) -> dict[str, Any]:
        return call(mcp_tools.cart_add, session_id=session_id, mpn=mpn, ref=ref, quantity=quantity)

    @tools.tool(description="The session's cart in order, with the total.")
    def cart_list(session_id: SessionId) -> dict[str, Any]:
        return call(mcp_tools.cart_list, session_id=session_id)

    @tools.tool(
        description="Remove an item from the session's cart by its MPN; the items after "
        "it move up. Returns the cart as it now stands."
    )
    def cart_remove(
        session_id: SessionId, mpn: Annotated[str, Field(max_length=255)]
    ) -> dict[str, Any]:
        return call(mcp_tools.cart_remove, session_id=session_id, mpn=mpn)

    @tools.tool(
        description="Tokens and cost spent, grouped by day, model, agent, user, "
        "step_type or session, between `start` and `end` (default: the last 30 days). "
        "user_id, agent_id and session_id keep only the steps of that user, agent or "
        "session (GET /usage's filters; another tenant's session has no steps here)."
    )
    def usage_report(
        group_by: Literal["day", "model", "agent", "user", "step_type", "session"] = "day",
        start: Annotated[str | None, Field(description=_USAGE_BOUND)] = None,
        end: Annotated[str | None, Field(description=_USAGE_BOUND)] = None,
        user_id: Annotated[Identifier | None, Field(description="Only this user's steps.")] = None,
        agent_id: Annotated[
            Identifier | None, Field(description="Only this agent's steps.")
        ] = None,
        session_id: Annotated[
            uuid.UUID | None, Field(description="Only this session's steps (its id).")
        ] = None,
    ) -> dict[str, Any]:
        return call(
            mcp_tools.usage_report_tool,
            group_by=group_by,
            user_id=user_id,
            agent_id=agent_id,
            session_id=None if session_id is None else str(session_id),
            start=start,
            end=end,
        )


_USAGE_BOUND = "A date (a whole UTC day) or an ISO 8601 date-time with its UTC offset."
