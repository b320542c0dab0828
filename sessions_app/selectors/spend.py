"""Set-based reads of the turn log's spend, for the apps that aggregate it (the analytics
rollups and the runaway scan). The SQL over `turn_step` and `chat_turn` lives here, with
the tables it reads; callers get rows, or, for a rollup that writes its sums with
INSERT … SELECT, a composed SELECT to embed. Composed with `psycopg.sql`."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import connection
from psycopg import sql

from sessions_app.models import TurnStep

# The aggregate of each spend counter over a set of steps, by counter name. A step of an
# unknown model still counts its tokens and a call, and shows in `unpriced_calls`.
STEP_AGGREGATES: dict[str, sql.SQL] = {
    "input_tokens": sql.SQL("SUM(input_tokens)"),
    "output_tokens": sql.SQL("SUM(output_tokens)"),
    "cached_tokens": sql.SQL("SUM(cached_tokens)"),
    "cache_write_tokens": sql.SQL("SUM(cache_write_tokens)"),
    "reasoning_tokens": sql.SQL("SUM(reasoning_tokens)"),
    "cost_usd": sql.SQL("COALESCE(SUM(cost_usd), 0)"),
    "calls": sql.SQL("COUNT(*)"),
    "errors": sql.SQL("COUNT(*) FILTER (WHERE NOT success)"),
    "unpriced_calls": sql.SQL("COUNT(*) FILTER (WHERE cost_usd IS NULL OR price_missing)"),
    "zero_cost_calls": sql.SQL(
        "COUNT(*) FILTER (WHERE cost_usd = 0 AND input_tokens + output_tokens > 0)"
    ),
    "negative_cost_calls": sql.SQL("COUNT(*) FILTER (WHERE cost_usd < 0)"),
}


def step_bucket(unit: str) -> sql.Composed:
    """A step's `created_at` truncated to a UTC hour or day, whatever the connection's
    time zone."""
    return sql.SQL("date_trunc({}, created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'").format(
        sql.Literal(unit)
    )


def step_sums_select(*, keys: Sequence[sql.Composable], counters: Sequence[str]) -> sql.Composed:
    """SELECT the `keys` expressions, then each named counter's aggregate, over the steps
    with `%(lo)s < id <= %(hi)s`, grouped by the keys."""
    positions = [sql.Literal(index + 1) for index in range(len(keys))]
    return sql.SQL(
        "SELECT {keys}, {sums} FROM turn_step WHERE id > %(lo)s AND id <= %(hi)s GROUP BY {by}"
    ).format(
        keys=sql.SQL(", ").join(keys),
        sums=sql.SQL(", ").join(STEP_AGGREGATES[name] for name in counters),
        by=sql.SQL(", ").join(positions),
    )


def step_first_id_since(*, since: datetime) -> int | None:
    """The lowest id of a step recorded at or after `since` (None if there is none)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT min(id) FROM turn_step WHERE created_at >= %s", [since])
        first: int | None = cursor.fetchone()[0]
    return first


def step_batch_after(
    *, after: int, below: int | None, size: int
) -> tuple[int, int, datetime] | None:
    """The next `size` steps by id after `after` (and below `below`, when given): their
    count, highest id and newest `created_at`; None when there are none."""
    bound = sql.SQL("AND id < %(below)s") if below is not None else sql.SQL("")
    query = sql.SQL(
        "SELECT count(*), max(id), max(created_at) FROM ("
        " SELECT id, created_at FROM turn_step WHERE id > %(after)s {bound}"
        " ORDER BY id LIMIT %(size)s) AS batch"
    ).format(bound=bound)
    with connection.cursor() as cursor:
        cursor.execute(query, {"after": after, "below": below, "size": size})
        count, highest, newest = cursor.fetchone()
    return None if not count else (count, highest, newest)


def sessions_step_spend(
    *, session_ids: Sequence[uuid.UUID], since: datetime, until: datetime
) -> dict[uuid.UUID, tuple[int, Decimal]]:
    """Tokens (input + output) and cost of each session's steps in (since, until]."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT session_id, SUM(input_tokens + output_tokens), COALESCE(SUM(cost_usd), 0)"
            " FROM turn_step WHERE session_id = ANY(%(ids)s)"
            " AND created_at > %(since)s AND created_at <= %(until)s GROUP BY session_id",
            {"ids": list(session_ids), "since": since, "until": until},
        )
        return {row[0]: (int(row[1]), row[2]) for row in cursor.fetchall()}


def sessions_repeated_failure(
    *, session_ids: Sequence[uuid.UUID], since: datetime, until: datetime, at_least: int
) -> dict[uuid.UUID, tuple[str, str, str, int]]:
    """Per session, the failure repeated most in (since, until], as (step_type, model,
    error, count), when it failed at least `at_least` times."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT ON (session_id) session_id, step_type, model,"
            " COALESCE(error, ''), count(*) FROM turn_step"
            " WHERE session_id = ANY(%(ids)s) AND NOT success"
            " AND created_at > %(since)s AND created_at <= %(until)s"
            " GROUP BY session_id, step_type, model, COALESCE(error, '')"
            " HAVING count(*) >= %(min)s ORDER BY session_id, count(*) DESC",
            {"ids": list(session_ids), "since": since, "until": until, "min": at_least},
        )
        return {row[0]: (row[1], row[2], row[3], row[4]) for row in cursor.fetchall()}


def sessions_recent_turn_inputs(
    *, session_ids: Sequence[uuid.UUID], until: datetime, turns: int
) -> dict[uuid.UUID, list[int]]:
    """Per session, the input tokens of its last `turns` live turns recorded by `until`,
    oldest first."""
    inputs: dict[uuid.UUID, list[int]] = defaultdict(list)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT session_id, input_tokens FROM ("
            " SELECT session_id, turn_number, input_tokens, row_number() OVER"
            " (PARTITION BY session_id ORDER BY turn_number DESC) AS recent"
            " FROM chat_turn WHERE session_id = ANY(%(ids)s) AND NOT rolled_back"
            " AND created_at <= %(until)s) AS t"
            " WHERE recent <= %(k)s ORDER BY session_id, turn_number",
            {"ids": list(session_ids), "until": until, "k": turns},
        )
        for session_id, input_tokens in cursor.fetchall():
            inputs[session_id].append(int(input_tokens))
    return inputs


# How often each of the given failures (step_type, model, error) failed in the session in
# (since, until]: the earlier failures a turn's own are counted with. The steps of the
# turn being recorded are not in the table yet.
WINDOW_FAILURES_SQL = sql.SQL(
    "SELECT s.step_type, s.model, COALESCE(s.error, ''), count(*) FROM {step} AS s"
    " WHERE s.session_id = %(session)s AND NOT s.success"
    " AND s.created_at > %(since)s AND s.created_at <= %(until)s"
    " AND (s.step_type, s.model, COALESCE(s.error, '')) IN (SELECT * FROM"
    " unnest(%(types)s::text[], %(models)s::text[], %(errors)s::text[]))"
    " GROUP BY 1, 2, 3"
).format(step=sql.Identifier(TurnStep._meta.db_table))


def session_window_failures(
    *, session_id: uuid.UUID, keys: Sequence[tuple[str, str, str]], since: datetime,
    until: datetime,
) -> dict[tuple[str, str, str], int]:  # fmt: skip
    """Per failure (step_type, model, error) among `keys`, how often the session's
    recorded steps failed so in (since, until]; failures never seen are left out."""
    if not keys:
        return {}
    params: dict[str, Any] = {
        "session": session_id, "since": since, "until": until,
        "types": [k[0] for k in keys], "models": [k[1] for k in keys],
        "errors": [k[2] for k in keys],
    }  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(WINDOW_FAILURES_SQL, params)
        return {(row[0], row[1], row[2]): int(row[3]) for row in cursor.fetchall()}
