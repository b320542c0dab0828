"""Serializers of the session-workspace routes: results, components, references, focus,
the cart and cart links. Input serializers validate at the edge; output serializers
describe the shapes for the OpenAPI schema."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import serializers

from sessions_app.api.fields import identifier_field, money_output_field
from sessions_app.models import ChatSession
from sessions_app.selectors.workspace import CartLine, cart_total, component_list
from sessions_app.services.selections import MAX_CART_LINES

MAX_RESULT_ITEMS = 100
MAX_REF_LENGTH = 500
MAX_QUANTITY = 100_000


def mpn_field(**kwargs: Any) -> serializers.CharField:
    options: dict[str, Any] = {"help_text": "The item's MPN (its id), unique within a session."}
    options.update(kwargs)
    return identifier_field(**options)


def ref_field(**kwargs: Any) -> serializers.CharField:
    options: dict[str, Any] = {
        "max_length": MAX_REF_LENGTH,
        "allow_blank": False,
        "trim_whitespace": True,
        "help_text": 'A reference in words, or a whole utterance: "the first one", "it", '
        '"the Dell", "the cheapest", "add the XPS to my list".',
    }
    options.update(kwargs)
    return serializers.CharField(**options)


class ResultItemSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    mpn = mpn_field()
    name = serializers.CharField(
        max_length=500, required=False, allow_blank=True, default="", help_text="Display name."
    )
    component_type = serializers.CharField(
        max_length=100,
        required=False,
        allow_blank=True,
        default="",
        help_text='What kind of item it is ("laptop", "ticket", "document").',
    )
    summary = serializers.CharField(
        max_length=10_000,
        required=False,
        allow_blank=True,
        default="",
        help_text="A short description shown to the user.",
    )
    data = serializers.DictField(  # type: ignore[assignment]  # DRF moves declared fields off the class
        required=False,
        default=dict,
        help_text="The full record as a JSON object. Numeric fields such as price, "
        "weight or screen size power superlatives like 'the cheapest'.",
    )


class ResultsStoreSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    query = serializers.CharField(
        max_length=2000, help_text="The search as the user or agent phrased it."
    )
    filters = serializers.DictField(
        required=False, default=dict, help_text="The structured filters of the search."
    )
    # A ListField (not many=True) so that errors name "items" / "items.3.mpn" directly.
    items = serializers.ListField(
        child=ResultItemSerializer(),
        allow_empty=True,
        max_length=MAX_RESULT_ITEMS,
        help_text=f"The results in the order shown (at most {MAX_RESULT_ITEMS}).",
    )


class ComponentSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    mpn = serializers.CharField(help_text="The item's MPN.")
    name = serializers.CharField(help_text="Display name.")
    component_type = serializers.CharField(help_text="The kind of item.")
    summary = serializers.CharField(help_text="Short description.")
    data = serializers.DictField(  # type: ignore[assignment]  # DRF moves declared fields off the class
        source="full_data", help_text="The full record."
    )
    position = serializers.IntegerField(
        allow_null=True, help_text="1-based position in the last results; null if not there."
    )
    fetched_at = serializers.DateTimeField(help_text="When it was last stored.")


class ComponentListSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    count = serializers.IntegerField(help_text="How many items the session holds.")
    results = ComponentSerializer(many=True, help_text="Last results by position, then newest.")


class ResultsStoredSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    last_query = serializers.CharField(help_text="The query just stored.")
    last_filters = serializers.DictField(help_text="Its filters.")
    last_results = serializers.ListField(
        child=serializers.CharField(), help_text="MPNs of the results, in order."
    )
    query_history = serializers.ListField(
        child=serializers.DictField(), help_text="The last 20 queries, newest last."
    )
    results = ComponentSerializer(many=True, help_text="The stored items, in order.")


class ResolveQuerySerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    ref = ref_field()
    set_focus = serializers.BooleanField(
        required=False, default=True, help_text="Make the item the focus (default true)."
    )


class ResolvedSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    item = ComponentSerializer(source="component", help_text="The item referred to.")
    rule = serializers.CharField(
        help_text="The rule that matched: comparative, mpn, ordinal, ordinal_from_end, last, "
        "superlative, name or focus."
    )
    expression = serializers.CharField(help_text="The words that referred to the item.")
    message = serializers.CharField(help_text="Why this item, in words.")
    focus_set = serializers.BooleanField(help_text="Whether the focus now points at it.")


class MpnOrRefSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    """Exactly one of `mpn` and `ref` names the item."""

    openapi_constraints = {"oneOf": [{"required": ["mpn"]}, {"required": ["ref"]}]}

    mpn = mpn_field(required=False)
    ref = ref_field(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("mpn" in attrs) == ("ref" in attrs):
            raise serializers.ValidationError(
                {"mpn": ["Give exactly one of mpn and ref."], "ref": ["Give exactly one."]}
            )
        return attrs


class FocusSetSerializer(MpnOrRefSerializer):
    pass


class SelectionAddSerializer(MpnOrRefSerializer):
    quantity = serializers.IntegerField(
        required=False, default=1, min_value=1, max_value=MAX_QUANTITY, help_text="How many."
    )
    note = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=2000, help_text="A free note."
    )


class SelectionUpdateSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    openapi_constraints = {"anyOf": [{"required": ["quantity"]}, {"required": ["note"]}]}

    quantity = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_QUANTITY, help_text="New quantity."
    )
    note = serializers.CharField(
        required=False, allow_blank=True, max_length=2000, help_text="New note."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError(
                {"quantity": ["Give quantity and/or note."], "note": ["Give quantity and/or note."]}
            )
        return attrs


class SelectionReorderSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    mpns = serializers.ListField(
        child=mpn_field(),
        allow_empty=True,
        max_length=MAX_CART_LINES,
        help_text="Every MPN of the cart exactly once, in the new order.",
    )


class CartLineSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    mpn = serializers.CharField(help_text="The item's MPN.")
    position = serializers.IntegerField(help_text="1-based position in the cart.")
    quantity = serializers.IntegerField(help_text="How many.")
    note = serializers.CharField(help_text="Free note.")
    selected_at = serializers.DateTimeField(help_text="When it was added.")
    name = serializers.CharField(help_text="The item's name.")
    component_type = serializers.CharField(help_text="The item's kind.")
    summary = serializers.CharField(help_text="The item's short description.")
    price = money_output_field(
        allow_null=True, help_text="Unit price read from the item's data, if any."
    )


class CartLineAddedSerializer(CartLineSerializer):
    added = serializers.BooleanField(
        help_text="true: the item was put at the end of the cart (201). false: it was already "
        "in the cart and nothing changed (200): its line is answered as it stands, with its "
        "own quantity and note, not the ones sent; `PATCH …/selections/{mpn}` changes them."
    )


class CartSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    count = serializers.IntegerField(help_text="Number of lines.")
    total = money_output_field(allow_null=True, help_text="Sum of priced lines times quantity.")
    results = CartLineSerializer(many=True, help_text="The lines, in cart order.")


class CartLinkCreateSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    ttl_seconds = serializers.IntegerField(
        required=False,
        min_value=60,
        max_value=settings.ENGRAM_CART_LINK_TTL_SECONDS,
        help_text="How long the link works, in seconds (default and most: "
        "ENGRAM_CART_LINK_TTL_SECONDS, 7 days unless configured); never past the "
        "session's own expiry (`expires_at` of the answer says when).",
    )


class CartLinkSerializer(serializers.Serializer):  # type: ignore[type-arg]  # generic in DRF's stubs only
    url = serializers.URLField(help_text="The signed URL of the browser cart page.")
    expires_at = serializers.DateTimeField(help_text="When the link stops working.")


def cart_body(lines: list[CartLine]) -> Any:
    """The cart as `GET …/cart` answers it, from its lines in order (`selection_lines`);
    the cart routes and the MCP `cart_get` tool answer the same body."""
    return CartSerializer({"count": len(lines), "total": cart_total(lines), "results": lines}).data


def results_stored_body(session: ChatSession) -> Any:
    """What `POST …/results` answers once the session holds a search's results; the MCP
    `results_store` tool answers the same body."""
    body = {
        "last_query": session.last_query,
        "last_filters": session.last_filters,
        "last_results": session.last_results,
        "query_history": session.query_history,
        "results": list(component_list(session=session).filter(position__isnull=False)),
    }
    return ResultsStoredSerializer(body).data
