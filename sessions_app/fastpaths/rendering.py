"""Responses without DRF's per-call machinery: the steps just written as the turn's
prefetched steps, a serializer's planned rendering, one shared serializer per class."""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, TypeVar, cast

from django.core.exceptions import ObjectDoesNotExist
from django.db.models.manager import BaseManager
from rest_framework import serializers
from rest_framework.fields import Field as ApiField
from rest_framework.fields import is_simple_callable

from sessions_app.models import ChatTurn, TurnStep

S = TypeVar("S", bound=serializers.BaseSerializer)  # type: ignore[type-arg]  # generic in DRF's stubs only

# --- 5. The steps just written, as the turn's prefetched steps ------------------------


def turn_steps_preloaded(turn: ChatTurn, steps: list[TurnStep]) -> None:
    """Serve `turn.steps.all()` from `steps` (what was just written for the turn): the
    201 body lists them, and a query for rows still in memory cost a round trip per turn.
    Writes Django's prefetch cache, as `prefetch_related` would."""
    turn._prefetched_objects_cache = {"steps": steps}  # type: ignore[attr-defined]  # set at run time; the stubs do not declare it


# --- 6, 7. Rendering and validating without DRF's per-call machinery ------------------
#
# A serializer's `to_representation`, planned once instead of walked per call.
#
# DRF renders an object field by field through generic machinery (`_readable_fields`,
# `get_attribute` with its dotted sources and error handling, a None check, the field's
# `to_representation`); for the 201 body of a turn (40-odd fields, nested steps) that was
# a tenth of the request's CPU. `planned_representation(serializer)` reads the same
# fields once and returns a function that renders an object the way the serializer does:
# same keys, same order, same values. Fields whose rendering is the identity or a plain
# cast (char, integer, boolean, JSON) are done inline; every other field (dates,
# decimals, UUIDs, …) still goes through its own `to_representation`, and a field with
# a dotted or `*` source falls back to DRF's `get_attribute`. The tests compare both
# renderings over varied turns, so a field added to the serializer stays covered.

Render = Callable[[Any], Any]


def _identity(value: Any) -> Any:
    return value


def _converter(field: ApiField[Any, Any, Any, Any]) -> Render:
    """How a leaf field turns a non-None attribute into its representation."""
    kind = type(field)
    if kind is serializers.CharField:
        return str
    if kind is serializers.IntegerField:
        return int
    if kind is serializers.JSONField and not field.binary:  # type: ignore[attr-defined]  # set at run time; the stubs do not declare it
        return _identity
    if kind is serializers.BooleanField:
        convert = field.to_representation
        return lambda value: value if type(value) is bool else convert(value)
    return field.to_representation


def _reader(field: ApiField[Any, Any, Any, Any]) -> Render:
    attrs = field.source_attrs
    if len(attrs) == 1 and field.source != "*":
        read = operator.attrgetter(attrs[0])

        def attribute(instance: Any) -> Any:
            if isinstance(instance, Mapping):
                return instance[attrs[0]]
            try:
                value = read(instance)
            except ObjectDoesNotExist:
                return None
            return value() if is_simple_callable(value) else value

        return attribute
    return field.get_attribute


def planned_representation(serializer: serializers.BaseSerializer[Any]) -> Render:
    """`serializer.to_representation`, planned. The serializer must be instance-less and
    keep no per-call state (as the turn serializers are)."""
    if isinstance(serializer, serializers.ListSerializer):
        child = planned_representation(serializer.child)  # type: ignore[arg-type]  # the stubs type this argument narrower than Django/DRF accept

        def many(value: Any) -> list[Any]:
            items = value.all() if isinstance(value, BaseManager) else value
            return [child(item) for item in items]

        return many
    if not isinstance(serializer, serializers.Serializer):
        return serializer.to_representation
    plan: list[tuple[str, Render, Render]] = []
    for field in serializer._readable_fields:
        name = field.field_name
        assert name is not None
        if isinstance(field, serializers.SerializerMethodField):
            method = getattr(serializer, field.method_name)
            plan.append((name, method, _identity))
        elif isinstance(field, serializers.BaseSerializer):
            plan.append((name, _reader(field), planned_representation(field)))
        else:
            plan.append((name, _reader(field), _converter(field)))

    def render(instance: Any) -> dict[str, Any]:
        out = {}
        for name, read, convert in plan:
            value = read(instance)
            out[name] = None if value is None else convert(value)
        return out

    return render


def shared_serializer(serializer_class: type[S]) -> S:
    """One instance-less serializer of `serializer_class` for every request. DRF builds a
    serializer's fields (for a ModelSerializer, by introspecting the model) on each
    instance: for the nested turn and steps, a large share of a turn's CPU
    (docs/decisions/turn-recording-fast-paths.md). An
    instance-less serializer keeps no per-call state in `run_validation` (what
    `is_valid` runs; it raises the same ValidationError) or `to_representation`, so one
    can serve every request."""
    instance: Any = _shared(cast(Any, serializer_class))
    return cast(S, instance)


@cache
def _shared(serializer_class: Any) -> Any:
    return serializer_class()
