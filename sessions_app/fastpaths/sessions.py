"""The session rows of turn recording: the lock read with its cart and reservations flag
(`sessions_select_for_turns`) and the counters' UPDATE (`sessions_save_counters`)."""

from __future__ import annotations

import json
import uuid
from functools import cache
from typing import Any, NamedTuple

from django.db import connection
from psycopg import sql

from config.model_rows import RowReader, row_reader
from sessions_app.models import BudgetReservation, ChatSession

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


@cache
def _session_reader() -> tuple[str, RowReader]:
    """The lock statement and how its rows become instances (config.model_rows), worked
    out once."""
    reader = row_reader(ChatSession, ChatSession._meta.concrete_fields, "s")
    return session_lock_statement().as_string(), reader


class SessionRead(NamedTuple):
    """A session as the lock read gives it: the instance, its cart (`[{mpn, quantity,
    note}]`), and whether any budget reservation of it existed when it was locked."""

    session: ChatSession
    cart: list[dict[str, Any]]
    reservations_held: bool


def sessions_select_for_turns(*, tenant_id: int, ids: list[uuid.UUID]) -> list[SessionRead]:
    """Lock the tenant's sessions among `ids` in id order and read each one with its cart
    and reservation flag: instances equal to what `ChatSession.objects.get` gives."""
    sql, reader = _session_reader()
    with connection.cursor() as cursor:
        cursor.execute(sql, [tenant_id, ids])
        rows = cursor.fetchall()
    return [
        SessionRead(reader.instance(row), [json.loads(item) for item in row[-2]], bool(row[-1]))
        for row in rows
    ]


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
