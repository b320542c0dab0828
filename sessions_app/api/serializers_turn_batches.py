"""`POST /api/v1/turns/batch`: request and response shapes. An item is the single-turn
body plus `session_id` and an optional `idempotency_key`, validated by the same
serializer (subclassed), so both routes accept exactly the same turns."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from sessions_app.api.serializers_turns import TurnCreateSerializer, TurnRecordedSerializer

IDEMPOTENCY_KEY_MAX = 255


class TurnBatchItemSerializer(TurnCreateSerializer):
    session_id = serializers.UUIDField(help_text="The tenant's session this turn belongs to.")
    idempotency_key = serializers.CharField(
        required=False,
        allow_null=True,
        min_length=1,
        max_length=IDEMPOTENCY_KEY_MAX,
        trim_whitespace=True,
        help_text=(
            "As the single route's Idempotency-Key header, per item: the same key and body "
            "replay the stored turn; another body is 422 for this item."
        ),
    )

    def validate_idempotency_key(self, value: str | None) -> str | None:
        if value is not None and not value.isprintable():
            raise serializers.ValidationError("Must be 1 to 255 printable characters.")
        return value


class TurnBatchSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    turns = TurnBatchItemSerializer(  # type: ignore[call-arg]  # many=True: a ListSerializer
        many=True,
        min_length=1,
        help_text=(
            "The turns, in the order they are recorded (per session, turn numbers follow "
            "this order). At most ENGRAM_TURN_BATCH_MAX (default 500): more is 413. Each "
            "item is validated on its own: a bad item is answered in its result and the "
            "others are recorded."
        ),
    )


class ItemErrorSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    code = serializers.CharField(help_text="The error code, as the single route's.")
    message = serializers.CharField(help_text="What went wrong, for a human.")
    fields = serializers.DictField(  # type: ignore[assignment]  # the stubs declare a narrower type than the framework assigns
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Field path (within the item) -> messages.",
    )


class TurnBatchResultSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    index = serializers.IntegerField(min_value=0, help_text="The item's position in `turns`.")
    status = serializers.IntegerField(
        help_text="201 recorded (or replayed); else the single route's error status "
        "(400, 404, 409, 410, 422)."
    )
    replayed = serializers.BooleanField(
        help_text="True: the key was used before with this body; `turn` is the stored answer."
    )
    turn = TurnRecordedSerializer(
        allow_null=True, help_text="The single route's 201 body; null on an error."
    )
    error = ItemErrorSerializer(allow_null=True, help_text="The item's error; null on a 201.")


class TurnBatchResponseSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    results = TurnBatchResultSerializer(many=True, help_text="One per item, in order.")


def item_result(
    index: int,
    status: int,
    *,
    turn: dict[str, Any] | None = None,
    replayed: bool = False,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {"index": index, "status": status, "replayed": replayed, "turn": turn, "error": error}
