"""Idempotency-Key on turn recording: replay, reuse, in flight, per tenant; and on real
PostgreSQL under concurrency, with real threads and separate connections."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connections
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app.models import ChatSession, ChatTurn, IdempotencyRecord, Tenant, TurnStep
from sessions_app.services.api_keys import api_key_create, tenant_get_or_create
from sessions_app.services.idempotency import idempotency_purge
from sessions_app.tasks import purge_idempotency_records
from tests.sessions_app.helpers import (
    SEED_STEPS,
    assert_error,
    create_session,
    expected_cost,
    post_turn,
    turn_body,
)


@pytest.mark.django_db
def test_same_key_same_body_replays_without_counting_twice(api: APIClient) -> None:
    session = create_session(api)
    first = post_turn(api, session["id"], key="turn-1")
    assert first.status_code == 201
    assert "Idempotent-Replayed" not in first
    again = post_turn(api, session["id"], key="turn-1")
    assert again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert ChatTurn.objects.filter(session_id=session["id"]).count() == 1
    totals = api.get(f"/api/v1/sessions/{session['id']}").json()["totals"]
    assert (totals["turns"], totals["input_tokens"]) == (1, 1250)


@pytest.mark.django_db
def test_same_key_other_body_is_422(api: APIClient) -> None:
    session = create_session(api)
    assert post_turn(api, session["id"], key="k").status_code == 201
    other = turn_body(user_message="something else")
    error = assert_error(post_turn(api, session["id"], other, key="k"), 422,
                         "idempotency_key_reused")  # fmt: skip
    assert "Idempotency-Key" in error["fields"]
    assert ChatTurn.objects.count() == 1


@pytest.mark.django_db
def test_in_flight_key_is_409(api: APIClient, tenant: Tenant) -> None:
    """A claim whose work has not committed yet (another request mid-flight)."""
    session = create_session(api)
    body = turn_body()
    from sessions_app.services.idempotency import request_fingerprint

    IdempotencyRecord.objects.create(
        tenant=tenant, key="busy", scope=f"POST /sessions/{session['id']}/turns",
        request_hash=request_fingerprint(body),
    )  # fmt: skip
    response = post_turn(api, session["id"], body, key="busy")
    assert_error(response, 409, "idempotency_in_flight")
    assert response["Retry-After"] == "1"
    assert ChatTurn.objects.count() == 0


@pytest.mark.django_db
def test_keys_are_scoped_per_tenant(api: APIClient, other_api: APIClient) -> None:
    mine, theirs = create_session(api), create_session(other_api)
    assert post_turn(api, mine["id"], key="shared").status_code == 201
    response = post_turn(other_api, theirs["id"], key="shared")
    assert response.status_code == 201 and "Idempotent-Replayed" not in response
    assert ChatTurn.objects.count() == 2


@pytest.mark.django_db
def test_failed_work_releases_the_key(api: APIClient) -> None:
    """A turn on an unknown session fails (404); the key is free for the retry."""
    assert_error(post_turn(api, "00000000-0000-0000-0000-000000000000", key="retry"), 404,
                 "not_found")  # fmt: skip
    assert not IdempotencyRecord.objects.filter(key="retry").exists()
    session = create_session(api)
    assert post_turn(api, session["id"], key="retry").status_code == 201


@pytest.mark.django_db
def test_bad_key_header_is_400(api: APIClient) -> None:
    session = create_session(api)
    error = assert_error(post_turn(api, session["id"], key="x" * 300), 400, "invalid")
    assert "Idempotency-Key" in error["fields"]


@pytest.mark.django_db
def test_purge_removes_only_old_records(api: APIClient, tenant: Tenant) -> None:
    session = create_session(api)
    post_turn(api, session["id"], key="old")
    post_turn(api, session["id"], key="new", body=turn_body(user_message="2"))
    IdempotencyRecord.objects.filter(key="old").update(
        created_at=timezone.now() - timedelta(days=3)
    )
    assert idempotency_purge(ttl_seconds=24 * 3600) == 1
    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["new"]
    assert purge_idempotency_records.delay().get() == 0  # the task: idempotent


def _concurrently(calls: int, workers: int, fn) -> list:
    """Run fn(i) from `workers` threads released together; each closes its connections."""
    barrier = threading.Barrier(workers)

    def run(index: int):
        if index < workers:
            barrier.wait(timeout=30)
        try:
            return fn(index)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(run, range(calls)))


@pytest.mark.django_db(transaction=True)
def test_100_concurrent_posts_with_one_key_make_one_turn() -> None:
    tenant = tenant_get_or_create(name="race")
    secret = api_key_create(tenant=tenant).secret
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    session = create_session(client)

    def post(_: int) -> tuple[int, bool]:
        thread_client = APIClient()
        thread_client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        response = post_turn(thread_client, session["id"], key="one-key")
        return response.status_code, response.get("Idempotent-Replayed") == "true"

    results = _concurrently(100, 50, post)
    statuses = Counter(results)
    print("100 posts, one key:", dict(statuses))
    assert {status for status, _ in statuses} <= {201, 409}, statuses
    fresh = [r for r in results if r == (201, False)]
    assert len(fresh) == 1, statuses  # one did the work; others replayed or saw it in flight
    assert ChatTurn.objects.filter(session_id=session["id"]).count() == 1
    assert TurnStep.objects.filter(session_id=session["id"]).count() == 3
    stored = ChatSession.objects.get(pk=session["id"])
    assert (stored.turn_count, stored.total_input_tokens, stored.total_output_tokens) == (
        1,
        1250,
        270,
    )


@pytest.mark.django_db(transaction=True)
def test_50_concurrent_turns_on_one_session_get_numbers_1_to_50_and_exact_totals() -> None:
    tenant = tenant_get_or_create(name="race")
    secret = api_key_create(tenant=tenant).secret
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    session = create_session(client)

    def post(index: int) -> int:
        thread_client = APIClient()
        thread_client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return post_turn(thread_client, session["id"], key=f"key-{index}").status_code

    statuses = _concurrently(50, 50, post)
    assert statuses == [201] * 50
    numbers = sorted(
        ChatTurn.objects.filter(session_id=session["id"]).values_list("turn_number", flat=True)
    )
    assert numbers == list(range(1, 51))
    stored = ChatSession.objects.get(pk=session["id"])
    assert stored.turn_count == 50 and stored.last_turn_number == 50
    assert stored.total_input_tokens == 50 * 1250
    assert stored.total_output_tokens == 50 * 270
    assert stored.total_calls == 50 * 3
    assert abs(stored.total_cost_usd - 50 * expected_cost(SEED_STEPS)) < Decimal("1e-9")
    step_sum = sum(TurnStep.objects.filter(session_id=session["id"]).values_list(
        "cost_usd", flat=True))  # fmt: skip
    assert stored.total_cost_usd == step_sum
