"""A request whose database connection is closed under it answers 503 with Retry-After,
never a 500, wherever the statement ran: inside the COPY of a turn's steps, which runs on
psycopg's raw cursor, outside Django's error wrappers; or outside a DRF view's handler.

To stop the request at that statement without a hook in the code, the test holds a SHARE
lock on turn_step (reads pass, writes wait): the turn's transaction reaches the COPY and
waits there. The test sees its backend waiting on the lock in COPY, terminates it (what a
restart's fast shutdown does to every backend), and releases the lock.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest
import requests
from rest_framework.test import APIClient

from config.embedded import free_port
from sessions_app.api import views_sessions
from sessions_app.models import ChatTurn, Tenant
from sessions_app.services.api_keys import IssuedKey
from sessions_app.services.sessions import session_create
from tests.live_processes import database_url
from tests.sessions_app.helpers import SEED_STEPS, assert_error

pytestmark = [pytest.mark.django_db(transaction=True)]

COPY_WAITING = """
SELECT pid FROM pg_stat_activity
WHERE wait_event_type = 'Lock' AND query ILIKE 'COPY%%turn_step%%' AND pid <> pg_backend_pid()
"""


def _waiting_copies(admin: psycopg.Connection[Any], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = [int(row[0]) for row in admin.execute(COPY_WAITING).fetchall()]
        if pids:
            return pids
        time.sleep(0.05)
    raise AssertionError("the turn's COPY never waited on the lock")


def test_connection_closed_inside_the_steps_copy_answers_503_and_a_retry_records(
    live_server: Any, issued_key: IssuedKey, tenant: Tenant
) -> None:
    session = session_create(tenant=tenant, user_id="u", agent_id="a")
    url = f"{live_server.url}/api/v1/sessions/{session.pk}/turns"
    headers = {"Authorization": f"Bearer {issued_key.secret}"}
    body: dict[str, Any] = {
        "user_message": "hello",
        "assistant_response": "hi",
        "steps": SEED_STEPS,
    }
    out: dict[str, requests.Response] = {}

    def post() -> None:
        out["response"] = requests.post(url, json=body, headers=headers, timeout=120)

    with (
        psycopg.connect(database_url(), autocommit=True) as admin,
        psycopg.connect(database_url()) as locker,
    ):
        locker.execute("LOCK TABLE turn_step IN SHARE MODE")
        client = threading.Thread(target=post)
        client.start()
        try:
            [pid] = _waiting_copies(admin, timeout=60)
            admin.execute("SELECT pg_terminate_backend(%s)", [pid])
        finally:
            locker.rollback()
            client.join(timeout=120)

    response = out["response"]
    assert response.status_code == 503, response.text
    assert response.json()["error"]["code"] == "dependency_unavailable"
    assert int(response.headers["Retry-After"]) > 0
    # The transaction died with its connection: nothing of the turn was stored.
    assert not ChatTurn.objects.filter(session_id=session.pk).exists()

    # The next request gets a working connection and records the turn once.
    retry = requests.post(url, json=body, headers=headers, timeout=120)
    assert retry.status_code == 201, retry.text
    assert ChatTurn.objects.filter(session_id=session.pk).count() == 1


def _refused_connection_error() -> psycopg.OperationalError:
    """What psycopg raises for a server that is not listening (a restart's gap)."""
    try:
        psycopg.connect(f"postgres://postgres@127.0.0.1:{free_port()}/engram", connect_timeout=5)
    except psycopg.OperationalError as exc:
        return exc
    raise AssertionError("a closed port accepted a connection")


def test_a_connection_error_that_escapes_the_view_handler_is_a_503_too(
    api: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The middleware's net under the DRF handler: an exception raised outside a view's
    own handling (here the whole dispatch) reaches Django, and a lost connection there is
    the same 503, not the generic 500."""
    error = _refused_connection_error()

    def dispatch(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(views_sessions.SessionListView, "dispatch", dispatch)
    api.raise_request_exception = False
    response = api.get("/api/v1/sessions")
    assert_error(response, 503, "dependency_unavailable")
    assert int(response["Retry-After"]) > 0
    assert response["X-Request-ID"]
