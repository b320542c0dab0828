"""Serializers of the user routes: erasure."""

from __future__ import annotations

from rest_framework import serializers


class UserErasureAnonymisedSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    steps = serializers.IntegerField(
        help_text="The user's steps, kept as anonymous spend: no user, session, turn or "
        "content; `/usage` by user or session counts them under the key null.",
    )


class UserErasureSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    user_id = serializers.CharField(help_text="The user erased.")
    deleted = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Rows deleted per kind: sessions, turns, components, selections, "
        "idempotency_records, budgets (spend budgets keyed by the user's id, scopes user "
        "and user_agent, with their spend), budget_alerts, user_spend_rollups (their sums "
        "moved to the erased users' row), and memory_app's kinds (memories, "
        "memory_versions, …). The user's steps are not deleted: see `anonymised`.",
    )
    anonymised = UserErasureAnonymisedSerializer(
        help_text="Rows kept with all that tied them to the user removed, per kind.",
    )
