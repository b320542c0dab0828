"""New model instances from a field plan worked out once per model (`instance_new`)."""

from __future__ import annotations

from functools import cache
from typing import Any, TypeVar

from django.db import router
from django.db.models import Model
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init

M = TypeVar("M", bound=Model)

# --- 8. New model instances -----------------------------------------------------------
#
# `Model(**values)` walks the model's fields on each call: pops each keyword, looks up
# the default of every other field, sets a related instance through its descriptor's
# checks, and sends `pre_init`/`post_init`. A turn builds one turn and a row per step
# that way, a twentieth of its CPU. `instance_new` sets the same attributes from a plan
# of the model's fields worked out once. It falls back to the plain constructor when a
# receiver listens to `pre_init` or `post_init` for the model, or when a keyword is not
# a concrete field (the plain constructor then raises or sets it as it would).

_Plan = tuple[tuple[Any, bool], ...]  # (a concrete field, whether it is a foreign key)


@cache
def _instance_plan(model: type[Model]) -> tuple[_Plan, frozenset[str]]:
    """The model's concrete fields (whether each is a foreign key) and every keyword the
    plan takes: each field's attname, and its name for a foreign key."""
    plan = []
    names = set()
    for field in model._meta.concrete_fields:
        if getattr(field, "generated", False):
            continue  # computed by the database; the constructor leaves it unset too
        relation = field.is_relation and field.many_to_one
        plan.append((field, bool(relation)))
        names.add(field.attname)
        if relation:
            names.add(field.name)
    return tuple(plan), frozenset(names)


def instance_new(model: type[M], /, **values: Any) -> M:
    """`model(**values)`: the same attribute values, related instances cached as their
    descriptor caches them, defaults for the fields not given."""
    plan, names = _instance_plan(model)
    if (
        not names.issuperset(values)
        or pre_init.has_listeners(model)
        or post_init.has_listeners(model)
    ):
        return model(**values)
    obj = model.__new__(model)
    obj._state = ModelState()
    attributes = obj.__dict__
    for field, relation in plan:
        if relation and field.name in values:
            related = values[field.name]
            if related is not None and not _relate(obj, related, field):
                return model(**values)  # the plain constructor refuses it as it does
            attributes[field.attname] = (
                None if related is None else getattr(related, field.target_field.attname)
            )
            field.set_cached_value(obj, related)
        elif field.attname in values:
            attributes[field.attname] = values[field.attname]
        else:
            attributes[field.attname] = field.get_default()
    return obj


def _relate(obj: Model, related: Any, field: Any) -> bool:
    """What a foreign key's descriptor does before it sets a related instance: both
    instances learn the database from each other (the router's choice) and the router
    must allow the relation. False when the constructor would refuse the instance (of
    another model, or a relation the router forbids)."""
    if not isinstance(related, field.remote_field.model._meta.concrete_model):
        return False
    if obj._state.db is None:
        obj._state.db = router.db_for_write(type(obj), instance=related)
    if related._state.db is None:
        related._state.db = router.db_for_write(type(related), instance=obj)
    return bool(router.allow_relation(related, obj))
