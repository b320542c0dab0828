"""The caller's own tenant: `GET/PATCH /api/v1/tenant`."""

from __future__ import annotations

from rest_framework import serializers

from sessions_app.api.fields import money_output_field


class TenantSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    name = serializers.CharField(help_text="The tenant's name (set by operators).")
    capture_prompts = serializers.BooleanField(
        help_text="Keep each step's `prompt` and `completion` (size-capped, erased with the "
        "user) for sessions whose own `capture_prompts` is null. Off by default "
        "(ENGRAM_CAPTURE_PROMPTS can turn it on for every tenant)."
    )
    default_budget_tokens = serializers.IntegerField(
        allow_null=True, help_text="Budget in tokens new sessions get; set in the admin."
    )
    default_budget_usd = money_output_field(
        allow_null=True, help_text="Budget in USD new sessions get; set in the admin."
    )
    created_at = serializers.DateTimeField(help_text="When the tenant was created.")


class TenantUpdateSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    capture_prompts = serializers.BooleanField(
        required=False,
        help_text="Turn prompt capture on or off for the tenant's sessions that do not "
        "decide for themselves (a session's `capture_prompts` true/false still wins). "
        "Applies to steps recorded from now on; captured text stays until erased. "
        "Absent: unchanged.",
    )
