"""The planner's statistics on when a memory began cover the very expression the search
filters on (memory_app.selectors.validity): statistics on another expression would leave
the time-only search's range estimated blind."""

from __future__ import annotations

import pytest
from django.db import connection

from memory_app.selectors.validity import validity_start_sql

pytestmark = pytest.mark.django_db


def _normalised(expression: str) -> str:
    return expression.lower().replace(" ", "").replace("m.", "")


def test_the_validity_start_statistics_are_on_the_searched_expression() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_get_statisticsobjdef_expressions(s.oid) FROM pg_statistic_ext s"
            " JOIN pg_class c ON c.oid = s.stxrelid"
            " WHERE s.stxname = 'memory_validity_start_stats' AND c.relname = 'memory'"
        )
        rows = cursor.fetchall()
        searched = validity_start_sql("m").as_string(cursor.connection)
    assert len(rows) == 1, "the statistics object is missing"
    (expressions,) = rows[0]
    assert [_normalised(e) for e in expressions] == [_normalised(searched)]
