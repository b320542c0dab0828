"""Statements prepared by the message that runs them (config.prepared_statements): the
PREPARE they send, and on real PostgreSQL what one message returns, that a connection
prepares a statement once, and again after its statements were dropped, and that a
plan cache mode named by the message holds for its statement and ends with it."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from psycopg import sql

from config.prepared_statements import prepared_statement

STATEMENT = sql.SQL(
    "SELECT %(word)s || '%%' || %(word)s AS doubled, %(n)s::int + 1 AS next,"
    " coalesce(%(maybe)s, 'none') AS maybe"
)


def test_parameters_are_numbered_in_the_order_the_text_first_reads_them() -> None:
    prepared = prepared_statement(STATEMENT, prefix="t_")
    assert prepared.parameters == ("word", "n", "maybe")
    assert "AS SELECT $1 || '%%' || $1 AS doubled, $2::int + 1 AS next," in prepared.prepare
    assert prepared.prepare.startswith(f"PREPARE {prepared.name} AS ")


def test_declared_types_come_first_in_their_order() -> None:
    prepared = prepared_statement(STATEMENT, prefix="t_", types=[("maybe", "text"), ("n", "int")])
    assert prepared.parameters == ("maybe", "n", "word")
    assert prepared.prepare.startswith(f"PREPARE {prepared.name}(text, int) AS SELECT $3 || ")


def test_the_name_is_the_text_s_digest() -> None:
    first = prepared_statement(STATEMENT, prefix="t_")
    assert prepared_statement(STATEMENT, prefix="t_").name == first.name
    changed = prepared_statement(STATEMENT + sql.SQL(", 2"), prefix="t_")
    assert changed.name != first.name
    assert first.name.startswith("t_")


def test_a_statement_holding_the_body_tag_is_refused() -> None:
    with pytest.raises(ValueError, match="statement"):
        prepared_statement(sql.SQL("SELECT '$statement$'"), prefix="t_")


def _run(message: sql.Composable, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(message, params)
        while cursor.nextset():  # past the SET's and the DO's results
            pass
        return list(cursor.fetchall())


def _prepared(prefix: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM pg_prepared_statements WHERE name LIKE %s", [prefix + "%"])
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.django_db
def test_one_message_prepares_and_runs_the_statement() -> None:
    prepared = prepared_statement(STATEMENT, prefix="t_run_", types=[("maybe", "text")])
    rows = _run(prepared.message(), {"word": "ab", "n": 41, "maybe": None})
    assert rows == [("ab%ab", 42, "none")]
    assert _run(prepared.message(), {"word": "x", "n": 1, "maybe": "set"}) == [("x%x", 2, "set")]


@pytest.mark.django_db
def test_a_connection_prepares_once_and_again_after_its_statements_are_dropped() -> None:
    prepared = prepared_statement(STATEMENT, prefix="t_once_", types=[("maybe", "text")])
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")
    assert _prepared("t_once_") == []
    for round_ in range(3):
        if round_ == 2:
            with connection.cursor() as cursor:
                cursor.execute("DEALLOCATE ALL")  # as a pooler's DISCARD ALL would
        assert _run(prepared.message(), {"word": "a", "n": round_, "maybe": None}) == [
            ("a%a", round_ + 1, "none")
        ]
        assert _prepared("t_once_") == [prepared.name]


def _plans(name: str) -> tuple[int, int]:
    """How often this connection ran the statement `name` with its generic plan and with
    a custom plan."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = %s",
            [name],
        )
        generic, custom = cursor.fetchone()
        return int(generic), int(custom)


def _plan_cache_mode() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW plan_cache_mode")
        return str(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)  # autocommit: each message its own transaction
def test_the_plan_mode_a_message_names_holds_for_its_statement_and_ends_with_it() -> None:
    prepared = prepared_statement(STATEMENT, prefix="t_plan_", types=[("maybe", "text")])
    params = {"word": "a", "n": 1, "maybe": None}
    for _ in range(3):
        assert _run(prepared.message(plan="force_generic_plan"), params) == [("a%a", 2, "none")]
    assert _plans(prepared.name) == (3, 0)
    assert _plan_cache_mode() == "auto"
    for _ in range(2):
        assert _run(prepared.message(plan="force_custom_plan"), params) == [("a%a", 2, "none")]
    assert _plans(prepared.name) == (3, 2)
    assert _plan_cache_mode() == "auto"
    assert _run(prepared.message(), params) == [("a%a", 2, "none")]
    generic, custom = _plans(prepared.name)
    assert generic + custom == 6 and _plan_cache_mode() == "auto"
