"""Writing many model rows with fixed SQL: the turn log's hot path.

Django's `save()` and `bulk_create()` compile their INSERT and prepare every value field
by field on each call; for a turn and its steps that was a fifth of a single turn's CPU
and a third of a batch's. These helpers write the same columns (taken from the model's
concrete fields, so a column added to the model later is written too) with statements
built once per model and row count, letting psycopg adapt the Python values itself.

What they do not do: run `pre_save` beyond the auto_now(_add) stamps, send model signals
or validate. Only the turn recording services use them, for models without such hooks.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from datetime import datetime
from functools import cache
from typing import Any

from django.db import connection
from django.db.models import Field, JSONField, Model

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


@cache
def _insert_sql(model: type[Model], count: int) -> str:
    names, _ = _columns(model, False)
    quote = connection.ops.quote_name
    row = "(" + ", ".join(["%s"] * len(names)) + ")"
    pk = model._meta.pk
    assert pk is not None
    return (
        f"INSERT INTO {quote(model._meta.db_table)} "  # noqa: S608 - names from the model
        f"({', '.join(quote(name) for name in names)}) VALUES "
        + ", ".join([row] * count)
        + f" RETURNING {quote(str(pk.column))}"
    )


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


def rows_copy(
    model: type[Model], objects: list[Any], *, now: datetime, with_pk: bool = True
) -> None:
    """Write `objects` with one COPY, then mark them saved. With `with_pk`, their pks
    must be set (`rows_next_ids`)."""
    if not objects:
        return
    names, getters = _columns(model, with_pk)
    quote = connection.ops.quote_name
    columns = ", ".join(quote(name) for name in names)
    table = quote(model._meta.db_table)
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy,
    ):
        for obj in objects:
            copy.write_row([get(obj, now) for get in getters])
    for obj in objects:
        obj._state.adding = False
        obj._state.db = connection.alias
