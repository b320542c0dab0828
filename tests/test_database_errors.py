"""Which database errors count as a lost connection (retried by every task), on errors
that real PostgreSQL connections raise."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from django.db import OperationalError, connections

from config.database_errors import DATABASE_CONNECTION_ERRORS, is_connection_lost
from config.embedded import free_port
from tests.live_processes import database_url

pytestmark = [pytest.mark.django_db(transaction=True)]


def _raised(action: Any) -> BaseException:
    try:
        action()
    except DATABASE_CONNECTION_ERRORS as exc:
        return exc
    raise AssertionError("nothing was raised")


def test_refused_and_terminated_connections_are_lost_statement_errors_are_not() -> None:
    refused = _raised(
        lambda: psycopg.connect(f"postgres://postgres@127.0.0.1:{free_port()}/x", connect_timeout=5)
    )
    assert is_connection_lost(refused)

    with psycopg.connect(database_url(), autocommit=True) as admin:
        victim = psycopg.connect(database_url(), autocommit=True)
        pid = victim.info.backend_pid
        admin.execute("SELECT pg_terminate_backend(%s, 10000)", [pid])
        terminated = _raised(lambda: victim.execute("SELECT 1"))
        victim.close()
    assert isinstance(terminated, psycopg.OperationalError)
    assert is_connection_lost(terminated)

    with psycopg.connect(database_url(), autocommit=True) as conn:
        conn.execute("SET statement_timeout = 1")
        timed_out = _raised(lambda: conn.execute("SELECT pg_sleep(1)"))
    assert isinstance(timed_out, psycopg.errors.QueryCanceled)
    assert not is_connection_lost(timed_out)


def test_django_wrapped_errors_are_judged_by_their_cause() -> None:
    own = connections.create_connection("default")
    try:
        with own.cursor() as cursor:
            cursor.execute("SET statement_timeout = 1")
        wrapped = _raised(lambda: own.cursor().execute("SELECT pg_sleep(1)"))
        assert isinstance(wrapped, OperationalError)
        assert not is_connection_lost(wrapped)

        with own.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            (pid,) = cursor.fetchone()
        with psycopg.connect(database_url(), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s, 10000)", [pid])
        lost = _raised(lambda: own.cursor().execute("SELECT 1"))
        assert isinstance(lost, OperationalError)
        assert is_connection_lost(lost)
    finally:
        own.close()
