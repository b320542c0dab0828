"""Serializers of the user routes: erasure."""

from __future__ import annotations

from rest_framework import serializers


class UserErasureSerializer(serializers.Serializer):  # type: ignore[type-arg]
    user_id = serializers.CharField(help_text="The user erased.")
    deleted = serializers.DictField(
        child=serializers.IntegerField(), help_text="Rows removed (or updated) per kind."
    )
