"""What each MCP tool does, as plain functions of (tenant, arguments) → JSON. They
validate with the REST API's own serializers and call the same services and selectors,
so a tool and its REST route accept, refuse and answer alike. An error a client can act
on becomes `ToolCallError` (an MCP tool error carrying the REST API's error body, every
member of it)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, TypeVar

from django.conf import settings
from django.db import connection
from rest_framework.exceptions import ValidationError

from analytics_app.api.serializers import UsageQuerySerializer, UsageReportSerializer
from analytics_app.selectors.usage import usage_report
from memory_app.api.serializers import MemoryCreateSerializer
from memory_app.api.serializers_context import ContextQuerySerializer, ContextSerializer
from memory_app.api.serializers_memory import MemoryAddResultSerializer
from memory_app.api.serializers_search import MemorySearchSerializer, search_result_data
from memory_app.services.context import context_serve
from memory_app.services.memories import memory_add
from memory_app.services.search import memory_search_for_actor
from sessions_app.api.preconditions import IF_MATCH_HEADER, if_match_parse
from sessions_app.api.renderers import jsonable
from sessions_app.api.representation_budgets import figures_data
from sessions_app.api.serializers_budget_check import (
    BudgetCheckSerializer,
    BudgetReservationSerializer,
)
from sessions_app.api.serializers_budgets import BudgetFiguresSerializer
from sessions_app.api.serializers_sessions import SessionCreateSerializer, SessionSerializer
from sessions_app.api.serializers_workspace import (
    CartLineSerializer,
    ResolvedSerializer,
    ResultsStoreSerializer,
    SelectionAddSerializer,
    cart_body,
    results_stored_body,
)
from sessions_app.api.views_turns import turn_record_request
from sessions_app.errors import ApplicationError, BudgetExceeded, PreconditionFailed
from sessions_app.selectors.sessions import session_get, session_get_for_write
from sessions_app.selectors.workspace import selection_lines
from sessions_app.services.budget_refusals import budget_refusal_message, budget_retry_after
from sessions_app.services.budgets import budget_check_reserve
from sessions_app.services.references import session_reference_resolve
from sessions_app.services.results import ResultItem, session_results_store
from sessions_app.services.selections import selection_add, selection_remove
from sessions_app.services.sessions import session_create, session_resume_or_create

if TYPE_CHECKING:
    from sessions_app.models import Tenant

T = TypeVar("T")


class ToolCallError(Exception):
    """A refused call: `body` is the REST API's error `{"code", "message", "fields"}`
    with the members `extra` adds to it (as REST's `error.state_etag` of a 412), and the
    exception's text its JSON (integrations.mcp_errors answers it as is)."""

    def __init__(
        self,
        code: str,
        message: str,
        fields: dict[str, Any] | None = None,
        *,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.body: dict[str, Any] = {
            **(extra or {}),
            "code": code,
            "message": message,
            "fields": fields or {},
        }
        super().__init__(json.dumps(self.body))
        self.code = code
        self.fields = fields or {}
        self.extra = extra or {}

    @classmethod
    def of(cls, exc: ApplicationError, *, fields: dict[str, Any] | None = None) -> ToolCallError:
        """The tool error of an application error: the body the REST handler answers for
        it, with every member its `extra` carries (`successor_session_id` of a rotated
        session, `state_etag` of a 412, the holder's `session_id` of a 409, a
        reference's candidates, ...). `fields` replaces the error's fields when a tool
        names them by its own arguments rather than the route's."""
        return cls(
            exc.code,
            exc.message,
            exc.fields if fields is None else fields,
            extra=jsonable(exc.extra),
        )


def _validated(serializer: Any) -> dict[str, Any]:
    if not serializer.is_valid():
        raise ToolCallError("invalid", "Invalid arguments.", jsonable(serializer.errors))
    return dict(serializer.validated_data)


def run_tool(work: Callable[[], T]) -> T:
    """Runs one tool call on its worker thread: application errors become tool errors,
    and the thread's database connection is closed after, since MCP's worker threads are
    not Django request threads and nothing else would close it."""
    try:
        return work()
    except ApplicationError as exc:
        raise ToolCallError.of(exc) from exc
    except ValidationError as exc:
        raise ToolCallError("invalid", "Invalid arguments.", jsonable(exc.detail)) from exc
    finally:
        connection.close()


def session_open(
    tenant: Tenant,
    *,
    agent_id: str,
    user_id: str,
    external_session_id: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """`POST /sessions`: with `external_session_id`, as with `resume: true` (the live
    session of that id, or a new one); without it, a new session."""
    payload = {
        "agent_id": agent_id,
        "user_id": user_id,
        "external_session_id": external_session_id,
        "resume": external_session_id is not None,
        **extra,
    }
    data = _validated(
        SessionCreateSerializer(data={k: v for k, v in payload.items() if v is not None})
    )
    if data.pop("resume"):
        session, created = session_resume_or_create(tenant=tenant, **data)
    else:
        session, created = session_create(tenant=tenant, **data), True
    return {"created": created, "session": jsonable(SessionSerializer(session).data)}


def turn_record_tool(
    tenant: Tenant,
    *,
    session_id: str,
    idempotency_key: str | None,
    body: dict[str, Any],
    if_match: str | None = None,
) -> dict[str, Any]:
    """`POST …/sessions/{id}/turns`: the body as that route takes it (`reservation_id`,
    `reserve_next` included), so the answer is the route's 201 body (with `next_call`
    when the next call was reserved), plus `replayed`. `if_match` is the route's
    If-Match header; its errors (400 malformed, 412 stale) name the argument, and a 412
    carries the state's current tag as `state_etag`, as the route's error does, so an
    agent can retry on it without parsing the message."""
    try:
        outcome, answer = turn_record_request(
            tenant=tenant, session_id=session_id, data=body, idempotency_key=idempotency_key,
            if_match=if_match_parse(if_match, field="if_match"),
        )  # fmt: skip
    except PreconditionFailed as exc:
        fields = {"if_match": exc.fields.get(IF_MATCH_HEADER, [])}
        raise ToolCallError.of(exc, fields=fields) from exc
    return {"replayed": outcome.replayed, **jsonable(answer)}


def memory_add_tool(tenant: Tenant, **fields: Any) -> dict[str, Any]:
    payload = MemoryCreateSerializer(data={k: v for k, v in fields.items() if v is not None})
    _validated(payload)
    result = memory_add(tenant=tenant, draft=payload.to_draft())
    return jsonable(
        MemoryAddResultSerializer(
            {"action": result.action, "similarity": result.similarity, "memory": result.memory}
        ).data
    )


def memory_search_tool(tenant: Tenant, **fields: Any) -> dict[str, Any]:
    payload = MemorySearchSerializer(data={k: v for k, v in fields.items() if v is not None})
    _validated(payload)
    kwargs = payload.search_kwargs()
    outcome = memory_search_for_actor(tenant=tenant, **kwargs)
    return jsonable(
        search_result_data(query=kwargs["query"], outcome=outcome, as_of=kwargs["as_of"])
    )


def context_get(tenant: Tenant, *, session_id: str, **params: Any) -> dict[str, Any]:
    data = _validated(
        ContextQuerySerializer(data={k: v for k, v in params.items() if v is not None})
    )
    context = context_serve(
        tenant=tenant,
        session_id=session_id,
        query=data.get("query", ""),
        budget=data.get("budget") or settings.ENGRAM_CONTEXT_DEFAULT_BUDGET,
        acting_user_id=data.get("acting_user_id"),
        acting_roles=data.get("acting_roles") or [],
    )
    return jsonable(ContextSerializer(asdict(context)).data)


def resolve_reference(
    tenant: Tenant, *, session_id: str, ref: str, set_focus: bool
) -> dict[str, Any]:
    if not ref.strip():
        raise ToolCallError("invalid", "Invalid arguments.", {"ref": ["Must not be blank."]})
    session = (
        session_get_for_write(tenant=tenant, session_id=session_id)
        if set_focus
        else session_get(tenant=tenant, session_id=session_id)
    )
    resolved = session_reference_resolve(session=session, ref=ref, set_focus=set_focus)
    return jsonable(ResolvedSerializer(resolved).data)


def cart_add(tenant: Tenant, *, session_id: str, **fields: Any) -> dict[str, Any]:
    session = session_get_for_write(tenant=tenant, session_id=session_id)
    data = _validated(
        SelectionAddSerializer(data={k: v for k, v in fields.items() if v is not None})
    )
    line, created = selection_add(session=session, **data)
    return {"added": created, "line": jsonable(CartLineSerializer(line).data)}


def results_store(tenant: Tenant, *, session_id: str, **fields: Any) -> dict[str, Any]:
    """`POST …/sessions/{id}/results`: a search's items in the order shown, which
    `resolve_reference` and `cart_add` by `ref` then resolve against."""
    session = session_get_for_write(tenant=tenant, session_id=session_id)
    data = _validated(
        ResultsStoreSerializer(data={k: v for k, v in fields.items() if v is not None})
    )
    session = session_results_store(
        session=session,
        query=data["query"],
        filters=data["filters"],
        items=[ResultItem(**item) for item in data["items"]],
    )
    return jsonable(results_stored_body(session))


def cart_remove(tenant: Tenant, *, session_id: str, mpn: str) -> dict[str, Any]:
    """`DELETE …/selections/{mpn}`: the line goes and the lines after it move up; the
    answer is the cart as it now stands (`cart_list`'s body) and the MPN removed."""
    session = session_get_for_write(tenant=tenant, session_id=session_id)
    selection_remove(session=session, mpn=mpn)
    return {"removed": mpn, **jsonable(cart_body(selection_lines(session=session)))}


def cart_list(tenant: Tenant, *, session_id: str) -> dict[str, Any]:
    session = session_get(tenant=tenant, session_id=session_id)
    return jsonable(cart_body(selection_lines(session=session)))


# The tool's window arguments and GET /usage's names for them (`from` is a Python keyword).
_USAGE_ROUTE_NAMES = {"start": "from", "end": "to"}


def _usage_fields_as_arguments(fields: dict[str, Any]) -> dict[str, Any]:
    """The route serializer's error fields under the tool's argument names, its messages
    naming the tool's arguments too, so an agent is pointed at what it sent."""
    renamed: dict[str, Any] = {}
    for name, messages in fields.items():
        tool_name = next((t for t, r in _USAGE_ROUTE_NAMES.items() if r == name), name)
        if isinstance(messages, list):
            for tool_arg, route_arg in _USAGE_ROUTE_NAMES.items():
                messages = [
                    m.replace(f"`{route_arg}`", f"`{tool_arg}`") if isinstance(m, str) else m
                    for m in messages
                ]
        renamed[tool_name] = messages
    return renamed


def usage_report_tool(tenant: Tenant, **params: Any) -> dict[str, Any]:
    """`GET /usage`: `group_by`, `start`, `end` (the route's `from`, `to`) and the filters
    `user_id`, `agent_id` and `session_id`, validated by the route's serializer and
    answered by the same selector, so a filter refused there is refused here under the
    tool's name for it, and another tenant's session, like any session without steps of
    this tenant, answers no rows."""
    query = {_USAGE_ROUTE_NAMES.get(k, k): v for k, v in params.items() if v is not None}
    try:
        data = _validated(UsageQuerySerializer(data=query))
    except ToolCallError as exc:
        fields = _usage_fields_as_arguments(exc.fields)
        raise ToolCallError(exc.code, exc.body["message"], fields, extra=exc.extra) from exc
    return jsonable(UsageReportSerializer(usage_report(tenant=tenant, **data)).data)


def budget_check_tool(tenant: Tenant, *, session_id: str, **fields: Any) -> dict[str, Any]:
    """`POST …/budget/check`: the session's budget and every period budget that applies
    to its user, agent and model; with `reserve`, the estimate is held until a turn is
    recorded (the session's oldest live reservation is the one a turn spends) or the
    lease ends. Refused: a `budget_exceeded` tool error saying when to ask again."""
    given = {name: value for name, value in fields.items() if value is not None}
    data = _validated(BudgetCheckSerializer(data=given))
    decision = budget_check_reserve(
        tenant=tenant,
        session_id=session_id,
        estimated_tokens=data["estimated_tokens"],
        estimated_usd=data["estimated_cost_usd"],
        reserve=data["reserve"],
        lease_seconds=data.get("lease_seconds"),
        model=data.get("model"),
    )
    budgets = jsonable(
        BudgetFiguresSerializer([figures_data(f) for f in decision.periods], many=True).data
    )
    if not decision.check.allowed:
        retry = budget_retry_after(decision)
        message = budget_refusal_message(decision)
        raise BudgetExceeded(message if retry is None else f"{message} Ask again in {retry} s.")
    reservation = decision.reservation
    return {
        "allowed": True,
        "tokens_remaining_after": decision.check.tokens_remaining_after,
        "reservation": None
        if reservation is None
        else jsonable(BudgetReservationSerializer(reservation).data),
        "budgets": budgets,
    }
