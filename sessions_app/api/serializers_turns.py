"""Turn recording, the turn log and rollback: request and response shapes. Token counts
are normalised here, at the edge (see `sessions_app.usage`). The budget check's shapes
are in `serializers_budget_check`, re-exported here."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from sessions_app.api.fields import OffsetDateTimeField, money_output_field, token_count_field
from sessions_app.api.serializers_budget_check import (
    BudgetCheckResultSerializer as BudgetCheckResultSerializer,
)
from sessions_app.api.serializers_budget_check import (
    BudgetCheckSerializer as BudgetCheckSerializer,
)
from sessions_app.api.serializers_budget_check import (
    BudgetReservationSerializer as BudgetReservationSerializer,
)
from sessions_app.api.serializers_sessions import SessionSerializer, budget_state, session_totals
from sessions_app.models import ChatSession, ChatTurn, TurnStep
from sessions_app.selectors.session_state import state_etag
from sessions_app.services.turn_recording import TurnRecorded
from sessions_app.services.turn_totals import StepInput
from sessions_app.usage import UsageError, step_token_counts

MAX_STEPS_PER_TURN = 500
MAX_TEXT = 200_000
MAX_DURATION_MS = 7 * 24 * 3600 * 1000
MAX_TOOL_OUTPUT = 4000
MAX_PROMPT_MESSAGES = 500


class ChatMessageSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    role = serializers.ChoiceField(
        choices=["system", "user", "assistant", "tool"], help_text="Who speaks."
    )
    content = serializers.CharField(
        allow_blank=True, max_length=MAX_TEXT, trim_whitespace=False, help_text="The text."
    )


class StepInputSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    step_type = serializers.CharField(
        max_length=64, help_text="What the call did: intent, filter, search, response…"
    )
    model = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        default="",
        help_text="The model called, as the provider names it; blank for a tool call.",
    )
    input_tokens = token_count_field(
        required=False,
        allow_null=True,
        help_text="All input tokens, cached ones included. Required unless `usage` is given.",
    )
    output_tokens = token_count_field(
        required=False,
        allow_null=True,
        help_text="All output tokens, reasoning included. Required unless `usage` is given.",
    )
    cached_tokens = token_count_field(
        required=False, allow_null=True, help_text="Input tokens read from the prompt cache."
    )
    cache_write_tokens = token_count_field(
        required=False, allow_null=True, help_text="Input tokens written to the prompt cache."
    )
    reasoning_tokens = token_count_field(
        required=False, allow_null=True, help_text="Output tokens spent on hidden reasoning."
    )
    usage = serializers.DictField(
        required=False,
        allow_null=True,
        help_text=(
            "The provider's own usage object (OpenAI Chat/Responses, Anthropic, Gemini), "
            "normalised by Engram. Explicit counts beside it must agree with it."
        ),
    )
    duration_ms = serializers.IntegerField(
        required=False,
        default=0,
        min_value=0,
        max_value=MAX_DURATION_MS,
        help_text="Wall-clock time of the call in milliseconds.",
    )
    success = serializers.BooleanField(
        required=False,
        help_text="False if the call failed. Omitted: false when `error` is given (not "
        "blank), else true. `true` beside a non-blank `error` is refused (400 naming "
        "`steps.N.error`).",
    )
    error = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=10_000,
        default=None,
        help_text="The error, when the call failed; a non-blank one makes an omitted "
        "`success` false.",
    )
    prompt = serializers.ListField(
        child=ChatMessageSerializer(),
        required=False,
        allow_null=True,
        max_length=MAX_PROMPT_MESSAGES,
        help_text="The chat messages sent to the model. Kept only when prompt capture is on "
        "for the session or tenant, cut to ENGRAM_CAPTURE_MAX_CHARS; otherwise dropped.",
    )
    completion = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=MAX_TEXT,
        trim_whitespace=False,
        help_text="The model's answer; kept under the same rule as `prompt`.",
    )
    tool_output = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=MAX_TOOL_OUTPUT,
        trim_whitespace=False,
        help_text=f"A tool call's output, short or a summary of it (at most {MAX_TOOL_OUTPUT} "
        "characters). Recent ones are candidates of `GET …/context` (kind `tool_output`).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        try:
            counts = step_token_counts(explicit=attrs, usage=attrs.get("usage"))
        except UsageError as exc:
            raise serializers.ValidationError({exc.field: [exc.message]}) from exc
        return {**attrs, "counts": counts}

    @staticmethod
    def to_step_input(attrs: dict[str, Any]) -> StepInput:
        """A validated step as the service takes it (no instance needed: building a
        serializer costs more than the conversion)."""
        return StepInput(
            step_type=attrs["step_type"],
            model=attrs.get("model", ""),
            counts=attrs["counts"],
            duration_ms=attrs.get("duration_ms", 0),
            success=attrs.get("success", not (attrs.get("error") or "").strip()),
            error=attrs.get("error"),
            usage_raw=attrs.get("usage"),
            tool_output=attrs.get("tool_output", ""),
            prompt=attrs.get("prompt"),
            completion=attrs.get("completion", ""),
        )


class TurnCreateSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    user_message = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=MAX_TEXT,
        trim_whitespace=False,
        help_text="What the user said.",
    )
    assistant_response = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=MAX_TEXT,
        trim_whitespace=False,
        help_text="What the agent answered.",
    )
    intent_data = serializers.DictField(
        required=False, default=dict, help_text="The classified intent and its slots."
    )
    reasoning = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=MAX_TEXT,
        trim_whitespace=False,
        help_text="The agent's reasoning, if it keeps one.",
    )
    metadata = serializers.DictField(required=False, default=dict, help_text="Free-form metadata.")
    state = serializers.DictField(
        required=False, help_text="The session's new state; replaces it. Omit to keep it."
    )
    duration_ms = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=MAX_DURATION_MS,
        help_text="Wall-clock time of the turn; defaults to the sum of the steps'.",
    )
    steps = StepInputSerializer(  # type: ignore[call-arg]  # many=True makes a ListSerializer
        many=True,
        max_length=MAX_STEPS_PER_TURN,
        help_text="Every LLM or tool call of the turn, in order. May be empty.",
    )
    occurred_at = OffsetDateTimeField(
        required=False,
        help_text="When the exchange happened; defaults to now. For imported history: "
        "search and context use this time, not the recording's. Refused later than now "
        "plus ENGRAM_TURN_CLOCK_SKEW_SECONDS (300).",
    )
    reservation_id = serializers.UUIDField(
        required=False,
        help_text="The budget reservation this turn spends (from `POST …/budget/check` with "
        "`reserve: true`); it is released. Omitted: the session's oldest live reservation "
        "is released, as it is when the named one is unknown, ended or already spent; then "
        "the turn is still recorded (its spend happened) and warns `reservation_unknown`.",
    )

    @staticmethod
    def service_kwargs(validated_data: dict[str, Any]) -> dict[str, Any]:
        """`turn_record`'s keyword arguments from this serializer's validated data."""
        data = dict(validated_data)
        data["steps"] = [StepInputSerializer.to_step_input(step) for step in data["steps"]]
        return data


_STEP_HELP = {
    "step_order": "1-based position of the call in the turn.",
    "step_type": "What the call did.",
    "model": "The model called.",
    "input_tokens": "All input tokens, cached ones included.",
    "output_tokens": "All output tokens, reasoning ones included.",
    "cached_tokens": "Input tokens read from the prompt cache.",
    "cache_write_tokens": "Input tokens written to the prompt cache.",
    "reasoning_tokens": "Output tokens spent on hidden reasoning.",
    "price_missing": "True when the model has no price; then cost_usd is null.",
    "duration_ms": "Wall-clock time of the call.",
    "success": "False if the call failed.",
    "error": "The error, when the call failed.",
    "tool_output": "The tool's output (short or summarised), if the step sent one.",
    "prompt": "The messages sent, when prompt capture was on; null otherwise.",
    "completion": "The model's answer, when prompt capture was on.",
    "created_at": "When the step was recorded.",
}


class TurnStepSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    cost_usd = money_output_field(allow_null=True, help_text="USD; null when unpriced.")

    class Meta:
        model = TurnStep
        fields = [*_STEP_HELP, "cost_usd"]
        read_only_fields = fields
        extra_kwargs = {name: {"help_text": text} for name, text in _STEP_HELP.items()}


_TURN_HELP = {
    "id": "The turn's id.",
    "turn_number": "1-based, unique in the session, never reused.",
    "kind": "`exchange` (a user message and the answer) or `state_change` (a PATCH of state).",
    "changed_by": "Who made a `state_change`; blank for exchanges.",
    "user_message": "What the user said.",
    "assistant_response": "What the agent answered.",
    "intent_data": "The classified intent.",
    "reasoning": "The agent's reasoning.",
    "metadata": "Free-form metadata.",
    "state_before": "The session's state before the turn.",
    "state_after": "The session's state after the turn.",
    "input_tokens": "Sum of the steps' input tokens.",
    "output_tokens": "Sum of the steps' output tokens.",
    "cached_tokens": "Sum of the steps' cached input tokens.",
    "reasoning_tokens": "Sum of the steps' reasoning tokens.",
    "call_count": "Number of steps.",
    "error_count": "Steps that failed.",
    "unpriced_calls": "Steps whose model has no price.",
    "duration_ms": "Wall-clock time of the turn.",
    "idempotency_key": "The Idempotency-Key it was recorded with.",
    "compacted": "True once summarised by compaction.",
    "rolled_back": "True if a rollback undid this turn.",
    "rolled_back_at": "When it was rolled back.",
    "over_limit": "Per-turn ceilings its steps passed: `tokens`, `cost` or both (comma-"
    "separated); blank when none (ENGRAM_TURN_MAX_TOKENS, ENGRAM_TURN_MAX_COST_USD).",
    "created_at": "When it was recorded.",
    "occurred_at": "When the exchange happened (the caller's `occurred_at`, else when it "
    "was recorded).",
}


class TurnSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    cost_usd = money_output_field(help_text="USD, the sum of the priced steps.")
    steps = TurnStepSerializer(many=True, read_only=True, help_text="The calls, in order.")

    class Meta:
        model = ChatTurn
        fields = [*_TURN_HELP, "cost_usd", "steps"]
        read_only_fields = fields
        extra_kwargs = {name: {"help_text": text} for name, text in _TURN_HELP.items()}


class TurnWarningSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    code = serializers.CharField(
        help_text="budget_exceeded (the session's own budget), spend_budget_exceeded (a "
        "period budget of any scope the turn's spend reached; the message names it), "
        "runaway_detected (the turn's own steps show a runaway sign), session_runaway "
        "(the session is flagged), price_missing, reservation_unknown, session_rotated "
        "or turn_over_limit."
    )
    message = serializers.CharField(help_text="What happened, for a human.")


class SessionBriefSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    id = serializers.UUIDField(help_text="The session's id.")
    status = serializers.CharField(help_text="opened, active, compacted, expired, archived.")
    expires_at = serializers.DateTimeField(help_text="When it expires without further writes.")
    previous_session_id = serializers.UUIDField(
        allow_null=True,
        help_text="Set when this turn opened the session as the successor of a rotated one.",
    )
    state_etag = serializers.SerializerMethodField(
        help_text="The entity tag of the session's state after the turn (also the `ETag` "
        "header of `POST /sessions/{id}/turns`): send it as If-Match on the next write."
    )

    def get_state_etag(self, session: ChatSession) -> str:
        return state_etag(session.state)


class TurnRecordedSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    turn = TurnSerializer(help_text="The recorded turn with its steps.")
    session = SessionBriefSerializer(help_text="The session after the turn.")
    totals = serializers.SerializerMethodField(help_text="The session's new totals.")
    budget = serializers.SerializerMethodField(help_text="The session's budget state.")
    warnings = TurnWarningSerializer(
        many=True,
        help_text="What the agent should know: every budget the turn's spend reached "
        "(budget_exceeded, spend_budget_exceeded), runaway signs (runaway_detected, "
        "session_runaway), price_missing, reservation_unknown, session_rotated, "
        "turn_over_limit.",
    )

    @extend_schema_field(serializers.DictField())
    def get_totals(self, result: TurnRecorded) -> dict[str, Any]:
        return session_totals(result.session)

    @extend_schema_field(serializers.DictField())
    def get_budget(self, result: TurnRecorded) -> dict[str, Any]:
        return budget_state(result.session)


class RollbackResultSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    session = SessionSerializer(help_text="The session as restored.")
    restored_from_turn = serializers.IntegerField(help_text="State is as before this turn.")
    rolled_back_turns = serializers.ListField(
        child=serializers.IntegerField(), help_text="Turn numbers now marked rolled back."
    )
