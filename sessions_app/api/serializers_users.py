"""Serializers of the user routes: erasure."""

from __future__ import annotations

from rest_framework import serializers


class UserErasureSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    user_id = serializers.CharField(help_text="The user erased.")
    deleted = serializers.DictField(
        child=serializers.IntegerField(), help_text="Rows removed (or updated) per kind."
    )
