"""What a lost or refused database connection raises, for the places that answer it: the
API (503 with Retry-After) and the Celery tasks (a retry with backoff).

Django wraps what its cursors raise in `django.db.OperationalError` / `InterfaceError`;
statements run on psycopg's raw connection (the COPY of a turn's steps through
`cursor.cursor.copy`) raise psycopg's own classes, which are not subclasses of Django's.
`psycopg_pool.PoolTimeout` is a `psycopg.OperationalError`. A restart of PostgreSQL
closes every open connection ("server closed the connection unexpectedly") and refuses
new ones until it is up ("the database system is starting up", "Connection refused").
"""

from __future__ import annotations

import psycopg
from django.db import InterfaceError, OperationalError

DATABASE_CONNECTION_ERRORS: tuple[type[Exception], ...] = (
    OperationalError,
    InterfaceError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
)

# SQLSTATEs of a connection that is gone or not yet accepted: class 08 (connection
# exception), the server shutting down (57P01 admin_shutdown, 57P02 crash_shutdown) and
# starting up (57P03 cannot_connect_now: "the database system is starting up").
_CONNECTION_SQLSTATE_PREFIXES = ("08", "57P01", "57P02", "57P03")


def is_connection_lost(exc: BaseException) -> bool:
    """Whether `exc` (one of DATABASE_CONNECTION_ERRORS) is a lost or refused connection,
    not an error of the statement that psycopg also classes as operational (a deadlock,
    a statement timeout, a lock not available): worth retrying on a new connection later.
    A connection that closed or never opened has no SQLSTATE (the client saw it)."""
    error = exc if isinstance(exc, psycopg.Error) else exc.__cause__
    if isinstance(error, psycopg.InterfaceError) or isinstance(exc, InterfaceError):
        return True
    if not isinstance(error, psycopg.OperationalError):
        return isinstance(exc, OperationalError)
    sqlstate = error.sqlstate
    return sqlstate is None or sqlstate.startswith(_CONNECTION_SQLSTATE_PREFIXES)
