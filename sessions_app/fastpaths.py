"""The shortcuts the turn log's hot path takes around the ORM and DRF, in one place.

Each one does what a plain ORM or DRF call would do, faster, and each has a parity test
against that plain path in tests/sessions_app/test_fastpaths.py (the planned rendering
also in test_turn_batch_parity.py), so a field added to a model or a serializer cannot
silently drift. Only the turn recording services and views use them (import-linter
contract `fastpaths`). The shortcuts, each with its reason below:

1. `rows_insert`: INSERT … RETURNING with fixed SQL, instead of `save()`/`bulk_create`.
2. `rows_copy` (with `rows_next_ids`): COPY for many rows, instead of `bulk_create`.
3. `sessions_select_for_turns`: the session lock read as one fixed statement with its
   cart and whether it holds budget reservations, rows turned into instances with the
   ORM's own converters (`from_db`).
4. `sessions_save_counters`: one fixed UPDATE of the counters the turns moved, instead
   of `save(update_fields=…)` per session.
5. `turn_steps_preloaded`: the steps just written served as the turn's prefetched
   `steps`, instead of a query when the response lists them.
6. `planned_representation`: a serializer's `to_representation`, planned once.
7. `shared_serializer`: one stateless serializer instance per class, instead of one per
   request.
8. `instance_new`: a new model instance from keyword values with the field plan worked
   out once, instead of `Model(**values)` walking the model's fields per call.
"""

from __future__ import annotations

import json
import operator
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime
from functools import cache
from typing import Any, NamedTuple, TypeVar, cast

from django.core.exceptions import ObjectDoesNotExist
from django.db import connection, router
from django.db.models import Field, JSONField, Model
from django.db.models.base import ModelState
from django.db.models.manager import BaseManager
from django.db.models.signals import post_init, pre_init
from psycopg import sql
from rest_framework import serializers
from rest_framework.fields import Field as ApiField
from rest_framework.fields import is_simple_callable

from sessions_app.models import BudgetReservation, ChatSession, ChatTurn, TurnStep

M = TypeVar("M", bound=Model)
S = TypeVar("S", bound=serializers.BaseSerializer)  # type: ignore[type-arg]  # generic in DRF's stubs only

# --- 1, 2. Writing model rows with fixed SQL ------------------------------------------
#
# Django's `save()` and `bulk_create()` compile their INSERT and prepare every value field
# by field on each call: a large share of a turn's CPU, and more of a batch's (figures in
# docs/decisions/turn-recording-fast-paths.md). These helpers write the same columns
# (taken from the model's concrete fields, so a column added to the model later is
# written too) with statements composed once per model and row count (`psycopg.sql`,
# snapshot-tested), letting psycopg adapt the Python values itself.
#
# What they do not do: run `pre_save` beyond the auto_now(_add) stamps, send model signals
# or validate. Only the turn recording services use them, for models without such hooks.

Getter = Callable[[Model, datetime], Any]


def _getter(field: Field[Any, Any]) -> Getter:
    """How one field's column value is read from an instance. JSON is written as its
    text (psycopg sends it untyped and PostgreSQL casts it to the column's jsonb); the
    auto_now(_add) stamps take the caller's `now` and are set on the instance too."""
    attname = field.attname
    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):

        def stamped(obj: Model, now: datetime) -> Any:
            setattr(obj, attname, now)
            return now

        return stamped
    if isinstance(field, JSONField):
        encoder = field.encoder
        nullable = field.null

        def as_json(obj: Model, now: datetime) -> Any:
            value = getattr(obj, attname)
            return None if value is None and nullable else json.dumps(value, cls=encoder)

        return as_json
    read = operator.attrgetter(attname)
    return lambda obj, now: read(obj)


@cache
def _columns(model: type[Model], with_pk: bool) -> tuple[list[str], list[Getter]]:
    fields = [f for f in model._meta.concrete_fields if with_pk or not f.primary_key]
    return [str(f.column) for f in fields], [_getter(f) for f in fields]


def insert_statement(model: type[Model], count: int) -> sql.Composed:
    """INSERT of `count` rows of `model` (every concrete column but the pk, `%s` each),
    RETURNING the pk."""
    names, _ = _columns(model, False)
    pk = model._meta.pk
    assert pk is not None
    row = sql.SQL("({})").format(sql.SQL(", ").join([sql.Placeholder()] * len(names)))
    return sql.SQL("INSERT INTO {table} ({columns}) VALUES {rows} RETURNING {pk}").format(
        table=sql.Identifier(model._meta.db_table),
        columns=sql.SQL(", ").join(map(sql.Identifier, names)),
        rows=sql.SQL(", ").join([row] * count),
        pk=sql.Identifier(str(pk.column)),
    )


@cache
def _insert_sql(model: type[Model], count: int) -> str:
    """`insert_statement` rendered once per model and row count."""
    return insert_statement(model, count).as_string()


def rows_insert(model: type[Model], objects: list[Any], *, now: datetime) -> None:
    """INSERT `objects` (new, without pk) in one statement; each gets its pk back and is
    marked saved. For a handful of rows (one turn, its steps); many go by `rows_copy`."""
    if not objects:
        return
    _, getters = _columns(model, False)
    params = [get(obj, now) for obj in objects for get in getters]
    with connection.cursor() as cursor:
        cursor.execute(_insert_sql(model, len(objects)), params)
        keys = cursor.fetchall()
    for obj, (pk,) in zip(objects, keys, strict=True):
        obj.pk = pk
        obj._state.adding = False
        obj._state.db = connection.alias


def rows_next_ids(model: type[Model], count: int) -> list[int]:
    """`count` ids from the table's identity sequence, so that rows can be written by
    COPY (which returns nothing) and rows referencing them still name them."""
    pk = model._meta.pk
    assert pk is not None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [model._meta.db_table, pk.column, count],
        )
        return [int(row[0]) for row in cursor.fetchall()]


def copy_statement(model: type[Model], with_pk: bool) -> sql.Composed:
    """COPY … FROM STDIN into every concrete column of `model` (the pk with `with_pk`)."""
    names, _ = _columns(model, with_pk)
    return sql.SQL("COPY {table} ({columns}) FROM STDIN").format(
        table=sql.Identifier(model._meta.db_table),
        columns=sql.SQL(", ").join(map(sql.Identifier, names)),
    )


@cache
def _copy_sql(model: type[Model], with_pk: bool) -> str:
    return copy_statement(model, with_pk).as_string()


def rows_copy(
    model: type[Model], objects: list[Any], *, now: datetime, with_pk: bool = True
) -> None:
    """Write `objects` with one COPY, then mark them saved. With `with_pk`, their pks
    must be set (`rows_next_ids`)."""
    if not objects:
        return
    _, getters = _columns(model, with_pk)
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(_copy_sql(model, with_pk)) as copy,
    ):
        for obj in objects:
            copy.write_row([get(obj, now) for get in getters])
    for obj in objects:
        obj._state.adding = False
        obj._state.db = connection.alias


# --- 3. The session lock read ------------------------------------------------------


# The SELECT that locks sessions for recording turns, with each one's cart (`[{mpn,
# quantity, note}]` in position order) read by the same statement: most sessions have no
# cart, and a query of its own cost every turn a round trip. Likewise whether the session
# has budget reservations (live or ended): most have none, and then the turn has none to
# spend or clear, so it skips the DELETE that would (`turn_draft`). NO KEY UPDATE rather
# than UPDATE: it still serialises writers of the row (turn numbers stay race-free), but
# not the KEY SHARE locks that inserts referencing the session take for their foreign
# keys. Fixed SQL over the model's columns, built once, so that nothing compiles it per
# turn.
def session_lock_statement() -> sql.Composed:
    """The lock read over every concrete column of `chat_session`, then `cart_json` and
    `reservations_held`."""
    columns = [sql.Identifier("s", str(f.column)) for f in ChatSession._meta.concrete_fields]
    return sql.SQL(
        """
SELECT {columns}, ARRAY(
    SELECT jsonb_build_object('mpn', c.mpn, 'quantity', c.quantity, 'note', c.note)::text
      FROM session_selection AS c WHERE c.session_id = s.id ORDER BY c.position
) AS cart_json, EXISTS (
    SELECT FROM {reservation} AS r WHERE r.session_id = s.id
) AS reservations_held
  FROM chat_session AS s
 WHERE s.tenant_id = %s AND s.id = ANY(%s)
 ORDER BY s.id
   FOR NO KEY UPDATE OF s
"""
    ).format(
        columns=sql.SQL(", ").join(columns),
        reservation=sql.Identifier(BudgetReservation._meta.db_table),
    )


Converter = Callable[[Any, Any, Any], Any]


@cache
def _session_reader() -> tuple[str, list[tuple[int, list[Converter], Any]]]:
    """The lock statement and, per column needing one, the converters the ORM would
    apply (JSON text to Python, …), worked out once instead of per query as a raw
    queryset does."""
    fields = ChatSession._meta.concrete_fields
    converters = []
    for position, model_field in enumerate(fields):
        column = model_field.get_col("s")
        found = connection.ops.get_db_converters(column) + model_field.get_db_converters(connection)
        if found:
            converters.append((position, found, column))
    return session_lock_statement().as_string(), converters


class SessionRead(NamedTuple):
    """A session as the lock read gives it: the instance, its cart (`[{mpn, quantity,
    note}]`), and whether any budget reservation of it existed when it was locked."""

    session: ChatSession
    cart: list[dict[str, Any]]
    reservations_held: bool


def sessions_select_for_turns(*, tenant_id: int, ids: list[uuid.UUID]) -> list[SessionRead]:
    """Lock the tenant's sessions among `ids` in id order and read each one with its cart
    and reservation flag: instances equal to what `ChatSession.objects.get` gives."""
    sql, converters = _session_reader()
    with connection.cursor() as cursor:
        cursor.execute(sql, [tenant_id, ids])
        rows = cursor.fetchall()
    out = []
    for row in rows:
        values = list(row[:-2])
        for position, functions, column in converters:
            for convert in functions:
                values[position] = convert(values[position], column, connection)
        session = ChatSession.from_db(connection.alias, None, values)  # type: ignore[arg-type]  # the stubs type this argument narrower than Django/DRF accept
        out.append(SessionRead(session, [json.loads(item) for item in row[-2]], bool(row[-1])))
    return out


# --- 4. The session counters -------------------------------------------------------

# What recording turns changes on a session row, and the PostgreSQL type of each.
_COUNTER_COLUMNS = {
    "turn_count": "int",
    "last_turn_number": "int",
    "total_input_tokens": "bigint",
    "total_output_tokens": "bigint",
    "total_cached_tokens": "bigint",
    "total_reasoning_tokens": "bigint",
    "total_cost_usd": "numeric",
    "total_calls": "int",
    "total_errors": "int",
    "unpriced_calls": "int",
    "total_duration_ms": "bigint",
    "last_active_at": "timestamptz",
    "expires_at": "timestamptz",
    "updated_at": "timestamptz",
    "status": "text",
    "budget_exceeded_at": "timestamptz",
}


def save_counters_statement() -> sql.Composed:
    """UPDATE of the counter columns and the state of many sessions, from one typed array
    per column (`unnest`): the ids, each column in _COUNTER_COLUMNS order, the states."""
    names = list(_COUNTER_COLUMNS)
    return sql.SQL(
        "UPDATE chat_session AS s SET {sets}, state = v.state::jsonb"
        " FROM unnest(%s::uuid[], {arrays}, %s::text[]) AS v(id, {names}, state)"
        " WHERE s.id = v.id"
    ).format(
        sets=sql.SQL(", ").join(
            sql.SQL("{} = {}").format(sql.Identifier(name), sql.Identifier("v", name))
            for name in names
        ),
        arrays=sql.SQL(", ").join(
            sql.SQL("%s::{}[]").format(sql.SQL(kind)) for kind in _COUNTER_COLUMNS.values()
        ),
        names=sql.SQL(", ").join(map(sql.Identifier, names)),
    )


def save_one_counters_statement() -> sql.Composed:
    """The same for one session (the single route): plain parameters, which psycopg
    adapts at a fraction of the cost of typed arrays."""
    return sql.SQL("UPDATE chat_session SET {sets}, state = %s::jsonb WHERE id = %s").format(
        sets=sql.SQL(", ").join(
            sql.SQL("{} = %s::{}").format(sql.Identifier(name), sql.SQL(kind))
            for name, kind in _COUNTER_COLUMNS.items()
        )
    )


# Rendered once: no input reaches them.
_SAVE_COUNTERS_SQL = save_counters_statement().as_string()
_SAVE_ONE_COUNTERS_SQL = save_one_counters_statement().as_string()


def sessions_save_counters(sessions: list[ChatSession]) -> None:
    """Write what recording turns changed on these locked sessions (counters, activity,
    expiry, status, state, budget flag) in one UPDATE for all of them. The rows are
    locked by `sessions_lock_for_turns` until commit, so the values on the instances are the
    rows' values: no other writer can have moved them. A fixed statement, so that
    neither the ORM nor PostgreSQL compiles it per turn."""
    if not sessions:
        return
    if len(sessions) == 1:
        (session,) = sessions
        with connection.cursor() as cursor:
            cursor.execute(
                _SAVE_ONE_COUNTERS_SQL,
                [getattr(session, name) for name in _COUNTER_COLUMNS]
                + [json.dumps(session.state), session.pk],
            )
        return
    params: list[Any] = [[session.pk for session in sessions]]
    params += [[getattr(session, name) for session in sessions] for name in _COUNTER_COLUMNS]
    params.append([json.dumps(session.state) for session in sessions])
    with connection.cursor() as cursor:
        cursor.execute(_SAVE_COUNTERS_SQL, params)


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
