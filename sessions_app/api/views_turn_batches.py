"""`POST /api/v1/turns/batch`: many turns of any of the tenant's sessions in one request."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.api.exceptions import error_body, flatten_fields
from sessions_app.api.preconditions import (
    etag_parameter,
    if_match_parameter,
    parse_if_match,
    with_etag,
)
from sessions_app.api.serializers_turn_batches import (
    TurnBatchItemSerializer,
    TurnBatchResponseSerializer,
    TurnBatchSerializer,
    item_result,
)
from sessions_app.api.serializers_turns import TurnCreateSerializer
from sessions_app.api.tenancy import TenantGenericAPIView
from sessions_app.api.views_turns import turn_recorded_json
from sessions_app.errors import ApplicationError, ErrorCode, InvalidInput
from sessions_app.fastpaths import shared_serializer
from sessions_app.models import ChatTurn
from sessions_app.selectors.session_state import state_etag
from sessions_app.services.idempotency import request_fingerprint
from sessions_app.services.turn_batches import (
    BatchOutcome,
    BatchTurn,
    batch_session_id,
    turns_record_batch,
)
from sessions_app.services.turn_drafts import TurnFields

ITEM_ONLY = ("session_id", "idempotency_key")

BATCH_IF_MATCH = if_match_parameter(
    "The `ETag` (`state_etag`) of the session's state the batch is based on, or `*`, "
    "for a batch whose turns all name one `session_id` (else 400 naming `If-Match`). "
    "The batch is recorded only if the state still has that tag before its first turn "
    "(checked once, under the session's lock), whether or not its turns carry `state`; "
    "else 412 `precondition_failed` and nothing of the batch is recorded. Items "
    "answered from their `idempotency_key` (replays) are not checked, as a replayed "
    "`POST /sessions/{id}/turns` is not: a retry of a batch that was recorded answers "
    "its stored turns. Without the header the batch is unconditional. A value that is "
    "not `*` or quoted tags is a 400 naming `If-Match`; a weak tag never matches."
)
BATCH_ETAG = etag_parameter(
    200,
    description="When the turns all name one session and one of them answered 201: the "
    "entity tag of the state the batch left (after its last recorded turn; with none "
    "recorded, after its last replayed one), as `POST /sessions/{id}/turns` answers it. "
    "Send it as If-Match.",
)


class RequestTooLarge(ApplicationError):
    status = 413
    default_code = ErrorCode.REQUEST_TOO_LARGE
    default_message = "Too many turns in one batch."


def _error(exc: ApplicationError) -> dict[str, Any]:
    """The single route's `error` object, extras included (e.g. the successor of a
    rotated session, `successor_session_id`)."""
    body: dict[str, Any] = error_body(exc.code, exc.message, exc.fields, **exc.extra)["error"]
    return body


def _refuse_unknown_fields(raw_items: list[Any]) -> None:
    """An item naming a field the item schema does not have is refused with the whole
    request (400 naming `turns.<index>.<field>`), as the single route refuses an unknown
    field: it is the client's shape that is wrong (a typo, another API version), not one
    turn's values, and the schema says so (`additionalProperties: false`). Values, and
    items that are not objects, are answered item by item."""
    known = {
        name
        for name, field in shared_serializer(TurnBatchItemSerializer).fields.items()
        if not field.read_only
    }
    errors = {
        f"turns.{index}.{name}": ["Unknown field."]
        for index, raw in enumerate(raw_items)
        if isinstance(raw, dict)
        for name in sorted(str(key) for key in raw if key not in known)
    }
    if errors:
        raise InvalidInput(fields=errors)


def _parse_item(raw: Any) -> BatchTurn:
    """An item as the single route would take it: InvalidInput names the bad fields."""
    if not isinstance(raw, dict):
        raise InvalidInput(fields={"non_field_errors": ["Each turn must be a JSON object."]})
    try:
        validated = shared_serializer(TurnBatchItemSerializer).run_validation(raw)
    except serializers.ValidationError as exc:
        raise InvalidInput(fields=flatten_fields(exc.detail)) from exc
    session_id = validated.pop("session_id")
    key = validated.pop("idempotency_key", None)
    body = {name: value for name, value in raw.items() if name not in ITEM_ONLY}
    return BatchTurn(
        session_id=session_id,
        fields=TurnFields(**TurnCreateSerializer.service_kwargs(validated)),
        idempotency_key=key,
        # The single route's fingerprint of the same body: a key replays across routes.
        request_hash=request_fingerprint(body) if key is not None else "",
    )


class TurnBatchView(TenantGenericAPIView):
    queryset = ChatTurn.objects.all()
    serializer_class = TurnBatchSerializer

    @extend_schema(
        summary="Record many turns, of any of the tenant's sessions, in one request",
        description=(
            "Each item is recorded as `POST /sessions/{session_id}/turns` would record "
            "it (same validation, pricing, numbering, state, budget flags, hooks), and "
            "answered in `results[index]` with that route's status and body. One bad "
            "item never rejects the others. `idempotency_key` is per item and shares the "
            "single route's keys: the same key and body answer 201 with `replayed: true` "
            "and the stored turn; another body, 422 `idempotency_key_reused`; a key still "
            "in flight, 409. A key repeated inside the batch is recorded once. The "
            "recorded items commit together (one transaction) or not at all. An item "
            "with a field the item schema does not name is a 400 for the whole request "
            "(`turns.<index>.<field>`), as an unknown field is on the single route. "
            "With `If-Match`, the batch is conditional on its one session's state."
        ),
        request=TurnBatchSerializer,
        parameters=[BATCH_IF_MATCH, BATCH_ETAG],
        responses={
            200: TurnBatchResponseSerializer,
            400: OpenApiResponse(
                description='invalid: the body is not {"turns": [at least one item]}, an '
                "item has an unknown field, or `If-Match` is malformed or sent with turns "
                "of several sessions"
            ),
            412: OpenApiResponse(
                description="`precondition_failed`: If-Match does not match the session's "
                "state's current tag (`error.state_etag`); nothing of the batch was recorded."
            ),
            413: OpenApiResponse(
                description="request_too_large: more than ENGRAM_TURN_BATCH_MAX turns, or "
                "more than ENGRAM_TURN_BATCH_MAX_BODY_BYTES"
            ),
        },
    )
    def post(self, request: Request) -> Response:
        if_match = parse_if_match(request)
        data = request.data
        unknown = sorted(set(data) - {"turns"}) if isinstance(data, dict) else []
        if unknown:
            raise InvalidInput(fields={name: ["Unknown field."] for name in unknown})
        raw_items = data.get("turns") if isinstance(data, dict) else None
        if not isinstance(raw_items, list) or not raw_items:
            raise InvalidInput(fields={"turns": ["A list of at least one turn is required."]})
        limit = settings.ENGRAM_TURN_BATCH_MAX
        if len(raw_items) > limit:
            raise RequestTooLarge(
                f"At most {limit} turns per batch; got {len(raw_items)}.",
                fields={"turns": [f"Ensure this list has at most {limit} items."]},
            )
        _refuse_unknown_fields(raw_items)
        items: list[BatchTurn | None] = []
        refused: dict[int, ApplicationError] = {}
        for index, raw in enumerate(raw_items):
            try:
                items.append(_parse_item(raw))
            except ApplicationError as exc:
                items.append(None)
                refused[index] = exc
        outcomes = turns_record_batch(
            tenant=self.tenant, items=items, render=turn_recorded_json, if_match=if_match
        )
        response = Response({"results": _results(outcomes, refused)})
        etag = _batch_etag(outcomes) if batch_session_id(items) is not None else None
        return response if etag is None else with_etag(response, etag)


def _results(
    outcomes: list[BatchOutcome | None], refused: dict[int, ApplicationError]
) -> list[dict[str, Any]]:
    """One result per item, in order: the refusals of the view's own parsing by index."""
    results = []
    for index, outcome in enumerate(outcomes):
        if outcome is None:
            error = refused[index]
            results.append(item_result(index, error.status, error=_error(error)))
        elif outcome.error is not None:
            results.append(item_result(index, outcome.status, error=_error(outcome.error)))
        else:
            results.append(
                item_result(index, outcome.status, turn=outcome.body, replayed=outcome.replayed)
            )
    return results


def _batch_etag(outcomes: list[BatchOutcome | None]) -> str | None:
    """The tag of the state the batch left in its one session: after its last recorded
    turn, else after its last replayed one (a replay answers the tag it answered first,
    as the single route's does); None when no item answered 201."""
    answered = [o for o in outcomes if o is not None and o.status == 201 and o.body is not None]
    recorded = [o for o in answered if not o.replayed] or answered
    if not recorded:
        return None
    body = recorded[-1].body
    assert body is not None
    return state_etag(body["turn"]["state_after"])
