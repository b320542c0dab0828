from __future__ import annotations

from decimal import Decimal
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from sessions_app.api.fields import ContextPolicyField, identifier_field, money_output_field
from sessions_app.api.parsers import BIGINT_MAX
from sessions_app.models import ChatSession, SessionStatus
from sessions_app.selectors.session_state import state_etag
from sessions_app.selectors.session_status import session_status_now

MAX_TTL_SECONDS = 365 * 24 * 3600
MAX_REASONING = 200_000


class SessionCreateSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    user_id = identifier_field(help_text="The end user this session belongs to.")
    agent_id = identifier_field(help_text="The agent holding the conversation.")
    state = serializers.DictField(required=False, help_text="Free-form agent state (JSON object).")
    metadata = serializers.DictField(required=False, help_text="Free-form metadata.")
    ttl_seconds = serializers.IntegerField(
        required=False,
        min_value=60,
        max_value=MAX_TTL_SECONDS,
        help_text="Seconds of inactivity after which the session expires.",
    )
    budget_tokens = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=BIGINT_MAX,
        help_text="Token budget (input + output).",
    )
    budget_usd = serializers.DecimalField(
        required=False,
        allow_null=True,
        max_digits=14,
        decimal_places=6,
        min_value=Decimal(0),
        help_text="Budget in USD.",
    )
    external_session_id = serializers.CharField(
        required=False,
        allow_null=True,
        max_length=255,
        help_text="A provider's own session id to resume (e.g. a Claude CLI session).",
    )
    model = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="The model the agent calls; its context window (kept with the prices) sets "
        "the relative compaction threshold. Blank: the model of the latest step.",
    )
    compact_context_share = serializers.FloatField(
        required=False,
        allow_null=True,
        min_value=0.05,
        max_value=1.0,
        help_text="Compact when the open window passes this share of the model's context "
        "window (e.g. 0.7); null: ENGRAM_COMPACT_CONTEXT_SHARE. The absolute token "
        "threshold still applies; the lower one wins.",
    )
    rotate_after_tokens = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=10**12,
        help_text="Past this many tokens (input + output), the next turn opens a successor "
        "session (`previous_session_id` links it; this one is archived). Null: the agent's "
        "or the settings' default (ENGRAM_ROTATE_AFTER_TOKENS[_BY_AGENT]); 0: never.",
    )
    capture_prompts = serializers.BooleanField(
        required=False,
        allow_null=True,
        help_text="Keep each step's `prompt` and `completion` (size-capped) for the JSONL "
        "export; null or absent: the tenant's choice (off by default).",
    )
    context_policy = ContextPolicyField(
        required=False,
        max_length=64,
        help_text="The named context policy of the session (seed 004's A/B toggles): "
        "`default`, a name from ENGRAM_CONTEXT_POLICIES (keep4, keep8, no_compression by "
        "default) or one of the tenant's (`/tenant/context-policies`); another name is 400. "
        "`GET …/context?policy=` can still ask for another.",
    )
    provider = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=64,
        help_text=(
            "The LLM provider behind the agent, e.g. `claude` or `ollama`. Without "
            "`ttl_seconds`, the TTL is this provider's default (ENGRAM_SESSION_TTL_BY_PROVIDER: "
            "claude 30 days, ollama 7 days), else ENGRAM_SESSION_TTL_SECONDS."
        ),
    )

    resume = serializers.BooleanField(
        required=False,
        default=False,
        help_text=(
            "With `external_session_id`: answer the tenant's unexpired session for "
            "(user_id, agent_id, external_session_id) with 200 if there is one (the other fields "
            "are then ignored), else create it (201)."
        ),
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("resume") and not attrs.get("external_session_id"):
            raise serializers.ValidationError(
                {"external_session_id": ["Required when `resume` is true."]}
            )
        return attrs


class SessionUpdateSerializer(SessionCreateSerializer):
    user_id = None  # type: ignore[assignment]  # the stubs declare a narrower type than the framework assigns
    agent_id = None  # type: ignore[assignment]  # the stubs declare a narrower type than the framework assigns
    provider = None  # type: ignore[assignment]  # the stubs declare a narrower type than the framework assigns
    reasoning = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=MAX_REASONING,
        trim_whitespace=False,
        help_text="Why `state` changes; kept on the `state_change` turn that logs it.",
    )
    changed_by = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=255,
        help_text="Who changes `state` (an agent, an operator); kept on that turn.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)
        if ("reasoning" in attrs or "changed_by" in attrs) and "state" not in attrs:
            raise serializers.ValidationError(
                {"reasoning": ["Only meaningful with `state`: it explains a state change."]}
            )
        return attrs

    resume = None  # type: ignore[assignment]  # the stubs declare a narrower type than the framework assigns


class SessionSerializer(serializers.ModelSerializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    previous_session_id = serializers.UUIDField(
        read_only=True,
        allow_null=True,
        help_text="The session this one continues after a rotation; null if none.",
    )
    status = serializers.SerializerMethodField(
        help_text="The status as of now: `expired` once `expires_at` has passed, even before "
        "the periodic expiry task stores it."
    )
    totals = serializers.SerializerMethodField(help_text="Tokens, cost and counts so far.")
    budget = serializers.SerializerMethodField(help_text="The budget and what remains of it.")
    runaway = serializers.SerializerMethodField(help_text="Runaway flag, reason and time.")
    state_etag = serializers.SerializerMethodField(
        help_text="The entity tag of `state` (quotes included), also sent as the `ETag` "
        "header of the session's own responses: a hash of the state, so it changes with "
        "every change of the state (PATCH, a turn with `state`, a rollback) and with "
        "nothing else. Send it as `If-Match` on PATCH to replace the state only if nobody "
        "changed it since (else 412)."
    )

    class Meta:
        model = ChatSession
        fields = [
            "id",
            "user_id",
            "agent_id",
            "status",
            "state",
            "state_etag",
            "metadata",
            "external_session_id",
            "provider",
            "model",
            "compact_context_share",
            "rotate_after_tokens",
            "context_policy",
            "capture_prompts",
            "previous_session_id",
            "focus_mpn",
            "last_query",
            "last_filters",
            "last_results",
            "query_history",
            "totals",
            "budget",
            "runaway",
            "ttl_seconds",
            "expires_at",
            "created_at",
            "last_active_at",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.ChoiceField(choices=SessionStatus.choices))
    def get_status(self, session: ChatSession) -> str:
        return session_status_now(session)

    @extend_schema_field(serializers.CharField())
    def get_state_etag(self, session: ChatSession) -> str:
        return state_etag(session.state)

    @extend_schema_field(serializers.DictField())
    def get_totals(self, session: ChatSession) -> dict[str, Any]:
        return session_totals(session)

    @extend_schema_field(serializers.DictField())
    def get_budget(self, session: ChatSession) -> dict[str, Any]:
        return budget_state(session)

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_runaway(self, session: ChatSession) -> dict[str, Any] | None:
        if session.runaway_at is None:
            return None
        return {
            "flagged_at": session.runaway_at,
            "reason": session.runaway_reason,
            "detail": session.runaway_detail,
            "blocked": session.runaway_blocked,
        }


_money = money_output_field()


def money(value: Decimal | None) -> str | None:
    return None if value is None else _money.to_representation(value)


def session_totals(session: ChatSession) -> dict[str, Any]:
    return {
        "turns": session.turn_count,
        "input_tokens": session.total_input_tokens,
        "output_tokens": session.total_output_tokens,
        "cached_tokens": session.total_cached_tokens,
        "reasoning_tokens": session.total_reasoning_tokens,
        "total_tokens": session.total_tokens,
        "cost_usd": money(session.total_cost_usd),
        "calls": session.total_calls,
        "errors": session.total_errors,
        "unpriced_calls": session.unpriced_calls,
        "duration_ms": session.total_duration_ms,
    }


def budget_state(session: ChatSession) -> dict[str, Any]:
    tokens_remaining = (
        None if session.budget_tokens is None else session.budget_tokens - session.total_tokens
    )
    usd_remaining = (
        None if session.budget_usd is None else session.budget_usd - session.total_cost_usd
    )
    exceeded = (tokens_remaining is not None and tokens_remaining <= 0) or (
        usd_remaining is not None and usd_remaining <= 0
    )
    return {
        "budget_tokens": session.budget_tokens,
        "budget_usd": money(session.budget_usd),
        "tokens_remaining": tokens_remaining,
        "usd_remaining": money(usd_remaining),
        "exceeded": exceeded,
        "exceeded_at": session.budget_exceeded_at,
    }
