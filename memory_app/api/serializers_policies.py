"""Named context policies of the caller's tenant (seed 004's A/B toggles)."""

from __future__ import annotations

from rest_framework import serializers

from sessions_app.context_policy_limits import (
    KEEP_LAST_TURNS_MAX,
    MEMORY_LIMIT_MAX,
    PREDECESSOR_DEPTH_MAX,
)


class ContextPolicyWriteSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    """The whole policy (PUT replaces): a key left out or null takes the `default`
    policy's value, resolved when a context is assembled."""

    keep_last_turns = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=KEEP_LAST_TURNS_MAX,
        help_text=f"Newest turns reserved verbatim (the window), 0..{KEEP_LAST_TURNS_MAX}; "
        "null: ENGRAM_COMPACT_KEEP_LAST_TURNS.",
    )
    memory_limit = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=MEMORY_LIMIT_MAX,
        help_text=f"K: long-term memories searched, 0..{MEMORY_LIMIT_MAX}; null: 12.",
    )
    compression = serializers.BooleanField(
        required=False,
        allow_null=True,
        help_text="False: compacted turns are offered verbatim and no summary or milestone "
        "is used; null: true.",
    )
    predecessor_depth = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=PREDECESSOR_DEPTH_MAX,
        help_text=f"Rotated sessions walked back for context, 0..{PREDECESSOR_DEPTH_MAX}; "
        "null: ENGRAM_CONTEXT_PREDECESSOR_DEPTH.",
    )


class ContextPolicyOutSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    name = serializers.CharField(help_text="The policy's name, as sessions and `?policy=` use it.")
    origin = serializers.ChoiceField(
        choices=["default", "settings", "tenant"],
        help_text="`default`: the built-in policy (the settings' values); `settings`: from "
        "ENGRAM_CONTEXT_POLICIES, shared by every tenant; `tenant`: the tenant's own "
        "(replaces a settings policy of the same name for this tenant).",
    )
    keep_last_turns = serializers.IntegerField(help_text="Newest turns reserved verbatim.")
    memory_limit = serializers.IntegerField(help_text="K: memories searched.")
    compression = serializers.BooleanField(
        help_text="Summaries and milestones stand in for compacted turns."
    )
    predecessor_depth = serializers.IntegerField(
        help_text="Rotated sessions walked back for context."
    )


class ContextPolicyListSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    policies = ContextPolicyOutSerializer(
        many=True, help_text="`default` first, then by name; values resolved."
    )
