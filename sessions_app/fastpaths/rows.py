"""Writing model rows with fixed SQL: `rows_insert` (INSERT … RETURNING) and `rows_copy`
(COPY, with `rows_next_ids`), instead of `save()` and `bulk_create()`."""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from datetime import datetime
from functools import cache
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Field, JSONField, Model
from psycopg import sql

M = TypeVar("M", bound=Model)

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
