"""Engram's MCP server, built with the official `mcp` SDK for one tenant at a time: the
tenant is the API key's, fixed when the server is built (per process for stdio, per
request for streamable HTTP), so no tool can reach another tenant's data.

Tools are sync functions: the SDK runs them on worker threads, where Django's ORM may
run (it refuses to inside an event loop)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from integrations import mcp_tools
from integrations.mcp_arguments import BoundCall, Identifier, SessionId, ToolArgumentModel
from integrations.mcp_errors import EngramMCPServer
from integrations.mcp_tool_registry import ToolRegistry
from integrations.mcp_workspace_tools import register_results_tools, register_workspace_tools
from memory_app.api.serializers import MAX_CONTENT_CHARS
from memory_app.api.serializers_context import MAX_BUDGET, MAX_CONTEXT_QUERY_CHARS, MIN_BUDGET

if TYPE_CHECKING:
    from sessions_app.models import Tenant

INSTRUCTIONS = (
    "Engram is the memory of this agent. Call session_open first (with your own "
    "conversation id, to find the same session again later) to get a session_id; "
    "store what you learn about the user with memory_add and look it up with "
    "memory_search; call context_get before answering to get the assembled context; "
    "record each exchange with turn_record (with its LLM calls as steps, so spend is "
    "tracked); resolve phrases like 'the cheapest' with resolve_reference, against the "
    "results you stored with results_store; manage the cart with cart_add / cart_list / "
    "cart_remove; usage_report tells the spend."
)

# memory_app.models.MemoryType's values, spelled out for the tool schemas (a Literal must
# be static); tests/integrations/test_mcp.py holds the two equal.
MemoryTypeName = Literal[
    "preference",
    "fact",
    "episodic",
    "semantic",
    "procedural",
    "profile",
    "policy",
    "interest",
    "event",
]


class Step(ToolArgumentModel):
    """One LLM or tool call of a turn (the REST API's step, as a tool argument)."""

    step_type: str = Field(
        min_length=1, max_length=64, description="What the call did: intent, search, response…"
    )
    model: str = Field("", max_length=200, description="The model called; blank for a tool.")
    input_tokens: int = Field(0, ge=0, description="All input tokens, cached ones included.")
    output_tokens: int = Field(0, ge=0, description="All output tokens, reasoning included.")
    cached_tokens: int = Field(0, ge=0, description="Input tokens read from the prompt cache.")
    reasoning_tokens: int = Field(0, ge=0, description="Output tokens spent on reasoning.")
    duration_ms: int = Field(0, ge=0, description="Wall-clock time of the call.")
    success: bool | None = Field(
        None,
        description="False if the call failed. Omitted: false when `error` is given, else "
        "true; true beside an error is refused.",
    )
    error: str | None = Field(None, max_length=10_000, description="The error, if it failed.")


def _register_session_tools(tools: ToolRegistry, call: BoundCall) -> None:
    """session_open: the session of a conversation."""

    @tools.tool(
        description="Open the session of your conversation. With external_session_id "
        "(your own id of the conversation), the same agent, user and id always return the "
        "same live session, so you can find it again without keeping ours; without it, "
        "each call opens a new session. Returns `session.id` (use it as session_id in the "
        "other tools) and `created` (false: an existing session was resumed)."
    )
    def session_open(
        agent_id: Annotated[Identifier, Field(description="Your agent's id.")],
        user_id: Annotated[Identifier, Field(description="The end user you act for.")],
        external_session_id: Annotated[
            Identifier | None,
            Field(description="Your own id of this conversation, to resume its session."),
        ] = None,
        budget_tokens: Annotated[
            int | None, Field(ge=0, description="Token budget for a new session.")
        ] = None,
    ) -> dict[str, Any]:
        return call(
            mcp_tools.session_open,
            agent_id=agent_id,
            external_session_id=external_session_id,
            user_id=user_id,
            budget_tokens=budget_tokens,
        )


class NextCall(ToolArgumentModel):
    """The next LLM call's expected spend, to reserve with the turn (`reserve_next`)."""

    estimated_tokens: int = Field(ge=0, description="Input + output tokens it will spend.")
    estimated_cost_usd: float | None = Field(None, ge=0, description="USD, if you know.")
    model: str | None = Field(None, max_length=255, description="Its model (model budgets).")
    lease_seconds: int | None = Field(None, ge=1, le=3600, description="How long it holds.")


TURN_RECORD_DESCRIPTION = (
    "Record one exchange of the conversation: what the user said, what "
    "you answered, and each LLM or tool call as a step (step_type, model, "
    "input_tokens, output_tokens, optional cached_tokens / reasoning_tokens, "
    "duration_ms, success, error). Spend is priced per model and added to the "
    "session. Reuse the same idempotency_key when retrying so it is counted once. "
    "The turn spends a budget reservation (reservation_id, else the session's oldest "
    "live one). With reserve_next, the answer's next_call says whether your next LLM "
    "call may go ahead and holds its estimate, as budget_check would: one call instead "
    "of two. With if_match (the session's state_etag as you last read it), the turn is "
    "recorded only if nobody changed the state since, else a precondition_failed error "
    "whose state_etag is the state's current tag, and nothing is recorded (read the "
    "state again, decide again, and retry with that tag); the answer's "
    "session.state_etag is the new tag."
)


def _register_turn_tools(tools: ToolRegistry, call: BoundCall) -> None:
    """turn_record: one exchange and its LLM calls."""

    @tools.tool(description=TURN_RECORD_DESCRIPTION)
    def turn_record(
        session_id: SessionId,
        user_message: Annotated[str, Field(max_length=200_000)] = "",
        assistant_response: Annotated[str, Field(max_length=200_000)] = "",
        steps: Annotated[
            list[Step] | None,
            Field(max_length=500, description="The calls of this turn, in order."),
        ] = None,
        state: Annotated[
            dict[str, Any] | None, Field(description="The session's new state, if it changed.")
        ] = None,
        idempotency_key: Annotated[
            str | None, Field(min_length=1, max_length=255, description="Unique per turn.")
        ] = None,
        occurred_at: Annotated[
            str | None,
            Field(
                description="When the exchange happened (ISO 8601 with a time zone); "
                "defaults to now. For history recorded after the fact."
            ),
        ] = None,
        reservation_id: Annotated[
            str | None,
            Field(description="The reservation budget_check gave you, which this turn spends."),
        ] = None,
        reserve_next: Annotated[
            NextCall | None, Field(description="Also reserve the budget for your next call.")
        ] = None,
        if_match: Annotated[
            str | None,
            Field(
                max_length=1000,
                description="The session's state_etag (quotes included) this turn is based "
                "on, or *: record only if the state still has it.",
            ),
        ] = None,
    ) -> dict[str, Any]:
        return call(
            mcp_tools.turn_record_tool,
            session_id=session_id,
            idempotency_key=idempotency_key,
            if_match=if_match,
            body=_turn_record_body(
                user_message=user_message,
                assistant_response=assistant_response,
                steps=steps,
                reserve_next=reserve_next,
                state=state,
                occurred_at=occurred_at,
                reservation_id=reservation_id,
            ),
        )


def _turn_record_body(
    *,
    user_message: str,
    assistant_response: str,
    steps: list[Step] | None,
    reserve_next: NextCall | None,
    **optional: Any,
) -> dict[str, Any]:
    """turn_record's arguments as the REST route's body: `optional` ones only when given."""
    body: dict[str, Any] = {
        "user_message": user_message,
        "assistant_response": assistant_response,
        "steps": [step.model_dump(exclude_none=True) for step in steps or []],
        **{name: value for name, value in optional.items() if value is not None},
    }
    if reserve_next is not None:
        body["reserve_next"] = _next_call_body(reserve_next)
    return body


def _next_call_body(reserve_next: NextCall) -> dict[str, Any]:
    """`reserve_next` as the REST body carries it: the cost as a decimal string."""
    body = reserve_next.model_dump(exclude_none=True)
    if reserve_next.estimated_cost_usd is not None:
        body["estimated_cost_usd"] = str(reserve_next.estimated_cost_usd)
    return body


def _register_memory_tools(tools: ToolRegistry, call: BoundCall) -> None:
    """memory_add and memory_search: long-term memory of a user."""
    _register_memory_add(tools, call)
    _register_memory_search(tools, call)


def _register_memory_add(tools: ToolRegistry, call: BoundCall) -> None:
    @tools.tool(
        description="Remember something about the user for later conversations (a "
        "preference, a fact, ...). Near-duplicates are merged, not repeated; `action` "
        "says created, merged or duplicate."
    )
    def memory_add(
        user_id: Annotated[Identifier, Field(description="The user it is about.")],
        content: Annotated[
            str, Field(min_length=1, max_length=MAX_CONTENT_CHARS, description="What to remember.")
        ],
        type: Annotated[MemoryTypeName, Field(description="What kind of memory.")] = "fact",
        agent_id: Annotated[str, Field(max_length=255)] = "",
        tags: Annotated[list[str] | None, Field(description="Labels to filter on.")] = None,
        importance: Annotated[float | None, Field(ge=0, le=1)] = None,
        session_id: Annotated[str | None, Field(description="The session it came from.")] = None,
    ) -> dict[str, Any]:
        return call(
            mcp_tools.memory_add_tool,
            user_id=user_id,
            content=content,
            type=type,
            agent_id=agent_id,
            tags=tags,
            importance=importance,
            session_id=session_id,
        )


def _register_memory_search(tools: ToolRegistry, call: BoundCall) -> None:
    @tools.tool(
        description="Search what is remembered about a user, by meaning and by words. "
        "Returns the best memories first, each with its score."
    )
    def memory_search(
        query: Annotated[str, Field(min_length=1, max_length=2000)],
        user_id: Annotated[str | None, Field(description="The user you act for.")] = None,
        agent_id: str | None = None,
        types: list[MemoryTypeName] | None = None,
        tags: list[str] | None = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 10,
    ) -> dict[str, Any]:
        return call(
            mcp_tools.memory_search_tool,
            query=query,
            user_id=user_id,
            agent_id=agent_id,
            types=types,
            tags=tags,
            limit=limit,
        )


def _register_context_tools(tools: ToolRegistry, call: BoundCall) -> None:
    """context_get and resolve_reference: reads of a session."""

    @tools.tool(
        description="The context for your next LLM call: the recent conversation, "
        "summaries, focus, cart and relevant memories, packed under a token budget. "
        "Use `messages` as they are."
    )
    def context_get(
        session_id: SessionId,
        query: Annotated[
            str,
            Field(max_length=MAX_CONTEXT_QUERY_CHARS, description="What the next call is about."),
        ] = "",
        budget: Annotated[
            int | None, Field(ge=MIN_BUDGET, le=MAX_BUDGET, description="Tokens.")
        ] = None,
    ) -> dict[str, Any]:
        return call(mcp_tools.context_get, session_id=session_id, query=query, budget=budget)

    @tools.tool(
        description="Which item does a phrase refer to, among the results stored in the "
        "session: 'the first one', 'the 2nd', 'the last', 'it', 'the Dell', 'the "
        "cheapest'. Returns the item and the rule that matched; an unresolved phrase is "
        "an error that lists the candidates."
    )
    def resolve_reference(
        session_id: SessionId,
        ref: Annotated[str, Field(min_length=1, max_length=500)],
        set_focus: Annotated[bool, Field(description="Also make it the focus.")] = False,
    ) -> dict[str, Any]:
        return call(
            mcp_tools.resolve_reference, session_id=session_id, ref=ref, set_focus=set_focus
        )


def _register_budget_tools(tools: ToolRegistry, call: BoundCall) -> None:
    """Checking and reserving before an LLM call."""

    @tools.tool(
        description="Before an LLM call: may this session spend `estimated_tokens` more? "
        "Checks the session's budget and every period budget of its user, agent and model. "
        "With reserve (the default) the estimate is held for you until you record the turn "
        "with turn_record (which spends it) or the lease ends, so other agents cannot take "
        "it. Refused: a budget_exceeded error saying why and when to ask again; do not "
        "make the call then."
    )
    def budget_check(
        session_id: SessionId,
        estimated_tokens: Annotated[
            int, Field(ge=0, description="Input + output tokens the next call will spend.")
        ],
        estimated_cost_usd: Annotated[
            float | None, Field(ge=0, description="USD it will spend, if you know.")
        ] = None,
        model: Annotated[
            str | None, Field(max_length=255, description="The model of the next call.")
        ] = None,
        reserve: Annotated[bool, Field(description="Hold the estimate until the turn.")] = True,
        lease_seconds: Annotated[
            int | None, Field(ge=1, le=3600, description="How long the hold lasts.")
        ] = None,
    ) -> dict[str, Any]:
        return call(
            mcp_tools.budget_check_tool,
            session_id=session_id,
            estimated_tokens=estimated_tokens,
            estimated_cost_usd=None if estimated_cost_usd is None else str(estimated_cost_usd),
            model=model,
            reserve=reserve,
            lease_seconds=lease_seconds,
        )


# The groups in the order the tools are listed to clients.
TOOL_GROUPS: tuple[Callable[[ToolRegistry, BoundCall], None], ...] = (
    _register_session_tools,
    _register_turn_tools,
    _register_memory_tools,
    _register_context_tools,
    register_results_tools,
    register_workspace_tools,
    _register_budget_tools,
)


def build_server(tenant: Tenant) -> MCPServer:
    """The server of `tenant`'s tools."""

    def call(fn: Callable[..., dict[str, Any]], **arguments: Any) -> dict[str, Any]:
        try:
            return mcp_tools.run_tool(lambda: fn(tenant, **arguments))
        except mcp_tools.ToolCallError as exc:
            raise ToolError(str(exc)) from exc

    tools = ToolRegistry()
    for register in TOOL_GROUPS:
        register(tools, call)
    return EngramMCPServer(
        name="engram", instructions=INSTRUCTIONS, version="0.1.0", tools=list(tools.tools.values())
    )
