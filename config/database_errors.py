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
