"""`config.model_rows.load_timestamps_compiled`: on a cursor it marks, timestamptz values
are loaded by psycopg's compiled loader with the values and tzinfo Django's own loader
gives, and only where Django's zone is UTC."""

from __future__ import annotations

import datetime
from zoneinfo import ZoneInfo

import pytest
from django.db import connection

from config.model_rows import load_timestamps_compiled

pytestmark = pytest.mark.django_db

VALUES_SQL = """
    SELECT v FROM unnest(ARRAY[
        '2024-05-01 12:30:00.123456+00', '1999-12-31 23:59:59.999999-08',
        '2030-03-31 01:30:00+02', '0001-01-01 00:00:00+00', '9999-12-31 23:59:59.5+00', NULL
    ]::timestamptz[]) WITH ORDINALITY AS t (v, n) ORDER BY n
"""


def _read(*, compiled: bool) -> tuple[list[datetime.datetime | None], type]:
    with connection.cursor() as cursor:
        if compiled:
            load_timestamps_compiled(cursor)
        cursor.execute(VALUES_SQL)
        values = [row[0] for row in cursor.fetchall()]
        loader = cursor.cursor.adapters.get_loader(1184, 0)  # timestamptz, text
    return values, loader


def test_the_compiled_loader_gives_django_s_values() -> None:
    django_values, django_loader = _read(compiled=False)
    values, loader = _read(compiled=True)
    assert values == django_values
    assert values[-1] is None
    for value in values[:-1]:
        assert value is not None and value.tzinfo is datetime.UTC
    assert values[0] == datetime.datetime(2024, 5, 1, 12, 30, 0, 123456, tzinfo=datetime.UTC)
    # the loader changed, from Django's Python subclass to psycopg's compiled one
    assert django_loader.__module__.startswith("django.")
    assert loader.__module__.startswith("psycopg_binary")


def test_the_mark_stays_on_its_cursor() -> None:
    _read(compiled=True)
    _, loader = _read(compiled=False)
    assert loader.__module__.startswith("django.")


def test_another_zone_keeps_django_s_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    # Django's loader sets its own zone on every value: psycopg's would give the session's.
    monkeypatch.setattr(connection, "timezone", ZoneInfo("Europe/Paris"))
    _, loader = _read(compiled=True)
    assert loader.__module__.startswith("django.")
