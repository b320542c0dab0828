"""The turn log: record (idempotent), list, roll back; and the budget pre-flight check."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.api.pagination import CreatedCursorPagination
from sessions_app.api.preconditions import (
    etag_parameter,
    if_match_parameter,
    parse_if_match,
    with_etag,
)
from sessions_app.api.renderers import jsonable
from sessions_app.api.representation_budgets import figures_data
from sessions_app.api.serializers_budget_check import (
    BudgetCheckResultSerializer,
    BudgetCheckSerializer,
)
from sessions_app.api.serializers_budgets import BudgetFiguresSerializer
from sessions_app.api.serializers_next_call import (
    NextCallResultSerializer,
    TurnCreateReservingSerializer,
    TurnRecordedReservingSerializer,
)
from sessions_app.api.serializers_sessions import budget_state
from sessions_app.api.serializers_turns import (
    RollbackResultSerializer,
    TurnCreateSerializer,
    TurnRecordedSerializer,
    TurnSerializer,
)
from sessions_app.api.tenancy import TenantGenericAPIView
from sessions_app.errors import BudgetExceeded, InvalidInput
from sessions_app.fastpaths import planned_representation, shared_serializer
from sessions_app.models import ChatSession, ChatTurn, Tenant
from sessions_app.selectors.jsonl import captured_steps, steps_jsonl
from sessions_app.selectors.session_state import state_etag
from sessions_app.selectors.sessions import session_get
from sessions_app.selectors.turns import turn_get, turn_list
from sessions_app.services.budget_refusals import budget_refusal_message, budget_retry_after
from sessions_app.services.budgets import BudgetDecision, budget_check_reserve
from sessions_app.services.idempotency import IdempotentOutcome
from sessions_app.services.turn_drafts import TurnFields
from sessions_app.services.turn_recording import (
    NextCall,
    TurnRecorded,
    turn_record_idempotent,
    turn_record_reserving_next,
)
from sessions_app.services.turn_rollback import turn_rollback

IDEMPOTENCY_HEADER = "Idempotency-Key"
# The schema publishes this pattern; surrounding whitespace is trimmed first.
IDEMPOTENCY_KEY_PATTERN = re.compile(r"[!-~](?:[ -~]{0,253}[!-~])?")

TURN_IF_MATCH = if_match_parameter(
    "The `ETag` (`state_etag`) of the session's state this turn is based on, or `*`. "
    "The turn is recorded only if the state still has that tag (checked under the "
    "session's lock), whether or not the turn carries `state`; else 412 "
    "`precondition_failed` and nothing is recorded (no turn, steps, spend or state). "
    "A replay of a keyed turn answers its stored response without checking again. "
    "Without the header the turn is unconditional. A value that is not `*` or quoted "
    "tags is a 400 naming `If-Match`; a weak tag never matches."
)

ERRORS = {
    400: OpenApiResponse(description="invalid: `error.fields` names each bad field"),
    404: OpenApiResponse(description="not_found: no such session for this key's tenant"),
    410: OpenApiResponse(description="session_expired"),
}


@cache
def turn_recorded_body() -> Callable[[TurnRecorded], dict[str, Any]]:
    """The 201 body of a recorded turn: TurnRecordedSerializer's rendering, planned once
    (see `sessions_app.fastpaths`)."""
    return planned_representation(shared_serializer(TurnRecordedSerializer))


@cache
def _next_call_body() -> Callable[[Any], dict[str, Any]]:
    """NextCallResultSerializer's rendering, planned once (see `sessions_app.fastpaths`)."""
    return planned_representation(shared_serializer(NextCallResultSerializer))


def next_call_data(decision: BudgetDecision) -> dict[str, Any]:
    """The `next_call` member of a turn's answer."""
    check = decision.check
    return _next_call_body()(
        {
            "allowed": check.allowed,
            "reason": check.reason if check.allowed else budget_refusal_message(decision),
            "retry_after": budget_retry_after(decision),
            "tokens_remaining_after": check.tokens_remaining_after,
            "reservation": decision.reservation,
        }
    )


def turn_recorded_json(recorded: TurnRecorded, keyed: bool) -> dict[str, Any]:
    """A recorded turn's 201 body. A stored body must replay byte for byte, so a keyed
    one is kept as rendered JSON; without a key the renderer's one pass is enough."""
    data = turn_recorded_body()(recorded)
    return jsonable(data) if keyed else data


def idempotency_key(request: Request) -> str | None:
    key = request.headers.get(IDEMPOTENCY_HEADER)
    if key is None:
        return None
    key = key.strip()
    if not IDEMPOTENCY_KEY_PATTERN.fullmatch(key):
        raise InvalidInput(
            fields={IDEMPOTENCY_HEADER: ["Must be 1 to 255 printable ASCII characters."]}
        )
    return key


def turn_record_request(
    *,
    tenant: Tenant,
    session_id: str,
    data: Any,
    idempotency_key: str | None,
    if_match: list[str] | None = None,
) -> tuple[IdempotentOutcome, dict[str, Any]]:
    """A turn's request body (with `reserve_next`, optionally) validated and recorded, as
    `POST …/sessions/{id}/turns` and the MCP `turn_record` tool take it: the outcome and
    the answer's body (with `next_call` when it was asked for). `if_match`, the parsed
    If-Match, makes the turn conditional on the session's state (`turn_record`); a replay
    of a keyed turn answers the stored response without checking it again."""
    validated = shared_serializer(TurnCreateReservingSerializer).run_validation(data)
    reserve_next = validated.pop("reserve_next", None)
    # The turn is the same turn whatever it asks for its next call: a retry may
    # change the estimate without reusing the key for another body.
    sent = data if isinstance(data, dict) else {}  # validated: a dict
    turn_body = {k: v for k, v in sent.items() if k != "reserve_next"}
    fields = TurnFields(**TurnCreateSerializer.service_kwargs(validated), if_match=if_match)
    if reserve_next is None:
        outcome = turn_record_idempotent(
            tenant=tenant, session_id=session_id, fields=fields, idempotency_key=idempotency_key,
            request_body=turn_body, render=turn_recorded_json,
        )  # fmt: skip
        return outcome, outcome.body
    next_call = NextCall(
        estimated_tokens=reserve_next["estimated_tokens"],
        estimated_usd=reserve_next.get("estimated_cost_usd"),
        model=reserve_next.get("model"),
        lease_seconds=reserve_next.get("lease_seconds"),
    )
    outcome, decision = turn_record_reserving_next(
        tenant=tenant, session_id=session_id, fields=fields, idempotency_key=idempotency_key,
        request_body=turn_body, render=turn_recorded_json, next_call=next_call,
    )  # fmt: skip
    if decision is None:
        return outcome, outcome.body
    return outcome, {**outcome.body, "next_call": next_call_data(decision)}


class TurnCursorPagination(CreatedCursorPagination):
    ordering = "turn_number"
    ordered_by_time = False
    page_size_query_param = "page_size"
    max_page_size = 500


class TurnListView(TenantGenericAPIView):
    queryset = ChatTurn.objects.all()
    serializer_class = TurnSerializer
    pagination_class = TurnCursorPagination
    openapi_produces = {"POST": {"turn_number": "/turn/turn_number"}}

    @extend_schema(
        summary="The turn log, oldest first, with steps",
        responses={200: TurnSerializer(many=True), 404: ERRORS[404]},
    )
    def get(self, request: Request, session_id: str) -> Response:
        session = session_get(tenant=self.tenant, session_id=session_id)
        page = self.paginate_queryset(turn_list(session=session))
        return self.get_paginated_response(TurnSerializer(page, many=True).data)

    @extend_schema(
        summary="Record a turn with its steps (one transaction)",
        description=(
            "With an `Idempotency-Key`, the same key and body answer the stored response "
            "with header `Idempotent-Replayed: true`; another body answers 422 "
            "`idempotency_key_reused`; a request still in flight answers 409 "
            "`idempotency_in_flight`."
        ),
        request=TurnCreateReservingSerializer,
        parameters=[
            OpenApiParameter(
                IDEMPOTENCY_HEADER,
                str,
                OpenApiParameter.HEADER,
                required=False,
                pattern=f"^{IDEMPOTENCY_KEY_PATTERN.pattern}$",
                description="A unique key per logical request (e.g. a UUID), reused on retry.",
            ),
            TURN_IF_MATCH,
            etag_parameter(201),
        ],
        responses={
            201: TurnRecordedReservingSerializer,
            **ERRORS,
            409: OpenApiResponse(description="idempotency_in_flight"),
            412: OpenApiResponse(
                description="`precondition_failed`: If-Match does not match the state's "
                "current tag (`error.state_etag`); nothing was recorded."
            ),
            413: OpenApiResponse(description="request_too_large"),
            422: OpenApiResponse(description="idempotency_key_reused"),
        },
    )
    def post(self, request: Request, session_id: str) -> Response:
        outcome, body = turn_record_request(
            tenant=self.tenant, session_id=session_id, data=request.data,
            idempotency_key=idempotency_key(request), if_match=parse_if_match(request),
        )  # fmt: skip
        headers = {"Idempotent-Replayed": "true"} if outcome.replayed else None
        response = Response(body, status=outcome.status, headers=headers)
        # The tag of the state the turn left, also for a replay (read from its body).
        return with_etag(response, state_etag(body["turn"]["state_after"]))


class TurnDetailView(TenantGenericAPIView):
    queryset = ChatTurn.objects.all()
    serializer_class = TurnSerializer

    @extend_schema(
        summary="One turn of the log, with its steps",
        responses={200: TurnSerializer, 404: ERRORS[404]},
    )
    def get(self, request: Request, session_id: str, turn_number: int) -> Response:
        session = session_get(tenant=self.tenant, session_id=session_id)
        return Response(TurnSerializer(turn_get(session=session, turn_number=turn_number)).data)


class TurnRollbackView(TenantGenericAPIView):
    queryset = ChatTurn.objects.all()
    serializer_class = RollbackResultSerializer

    @extend_schema(
        summary="Restore the state from before turn n; later turns are marked rolled back",
        request=None,
        responses={
            200: RollbackResultSerializer,
            404: ERRORS[404],
            409: OpenApiResponse(description="conflict: the turn is already rolled back"),
            410: ERRORS[410],
        },
    )
    def post(self, request: Request, session_id: str, turn_number: int) -> Response:
        result = turn_rollback(tenant=self.tenant, session_id=session_id, turn_number=turn_number)
        return Response(RollbackResultSerializer(result).data)


class BudgetCheckView(TenantGenericAPIView):
    queryset = ChatSession.objects.all()
    serializer_class = BudgetCheckSerializer

    @extend_schema(
        summary="May the agent spend this much more? Optionally reserve it.",
        request=BudgetCheckSerializer,
        responses={
            200: BudgetCheckResultSerializer,
            **ERRORS,
            429: OpenApiResponse(
                description="budget_exceeded. With Retry-After (and `retry_after` in the "
                "body) when waiting can help: a period budget's end, or others' reservations' "
                "leases; without it (`retry_after` null) the limit does not reset by itself "
                "(a session's own budget, a budget of period `none`, a runaway block), as "
                "the message says"
            ),
        },
    )
    def post(self, request: Request, session_id: str) -> Response:
        payload = BudgetCheckSerializer(data=request.data)
        if not payload.is_valid():
            session_get(tenant=self.tenant, session_id=session_id)  # 404 before 400
            payload.is_valid(raise_exception=True)
        data = payload.validated_data
        decision = budget_check_reserve(
            tenant=self.tenant,
            session_id=session_id,
            estimated_tokens=data["estimated_tokens"],
            estimated_usd=data["estimated_cost_usd"],
            reserve=data["reserve"],
            lease_seconds=data.get("lease_seconds"),
            model=data.get("model"),
        )
        check, session = decision.check, decision.session
        budgets = [figures_data(figures) for figures in decision.periods]
        if not check.allowed:
            refusal = decision.refusal
            retry = budget_retry_after(decision)
            raise BudgetExceeded(
                budget_refusal_message(decision),
                extra={
                    "retry_after": retry,
                    "budget": jsonable(budget_state(session)),
                    "reserved_tokens": decision.held.tokens
                    if refusal is None
                    else refusal.figures.reserved_tokens,
                    "budget_id": None if refusal is None else str(refusal.figures.budget.pk),
                    "budgets": jsonable(BudgetFiguresSerializer(budgets, many=True).data),
                },
                headers={} if retry is None else {"Retry-After": str(retry)},
            )
        result = {
            "allowed": True,
            "estimated_tokens": data["estimated_tokens"],
            "tokens_remaining_after": check.tokens_remaining_after,
            "budget": budget_state(session),
            "reserved_tokens": decision.held.tokens,
            "reservation": decision.reservation,
            "budgets": budgets,
        }
        return Response(BudgetCheckResultSerializer(result).data)


class TurnJsonlView(TenantGenericAPIView):
    queryset = ChatTurn.objects.all()
    serializer_class = TurnSerializer

    @extend_schema(
        summary="Captured steps as chat-format JSONL (fine-tuning examples)",
        description="One line per step whose prompt/completion was captured (capture is off "
        'by default): `{"messages": [...prompt, {"role": "assistant", "content": '
        'completion}], "metadata": {session_id, turn_number, step_order, step_type, model, '
        "success}}`. Rolled-back turns are skipped. Content-Type `application/jsonl`.",
        responses={
            (200, "application/jsonl"): OpenApiResponse(
                OpenApiTypes.STR, description="JSON lines."
            ),
            404: ERRORS[404],
        },
    )
    def get(self, request: Request, session_id: str) -> StreamingHttpResponse:
        session = session_get(tenant=self.tenant, session_id=session_id)
        response = StreamingHttpResponse(
            steps_jsonl(captured_steps(session=session)), content_type="application/jsonl"
        )
        response["Content-Disposition"] = f'attachment; filename="{session.pk}.jsonl"'
        return response
