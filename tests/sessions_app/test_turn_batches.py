"""`POST /api/v1/turns/batch`: per-item answers, exact totals, shared idempotency keys,
and concurrent batches on real PostgreSQL with real threads and separate connections."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connections
from django.db.models import Count, Sum
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app.models import ChatSession, ChatTurn, IdempotencyRecord, TurnStep
from sessions_app.services.api_keys import api_key_create, tenant_get_or_create
from tests.sessions_app.helpers import (
    SEED_STEPS,
    assert_error,
    create_session,
    expected_cost,
    post_turn,
    turn_body,
)

BATCH = "/api/v1/turns/batch"
UNKNOWN = "00000000-0000-0000-0000-000000000000"


def post_batch(api: APIClient, turns: list[Any]) -> Any:
    return api.post(BATCH, {"turns": turns}, format="json")


def item(session_id: str, key: str | None = None, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"session_id": session_id, **turn_body(**fields)}
    if key is not None:
        body["idempotency_key"] = key
    return body


def assert_totals_match_turns(session_id: str) -> ChatSession:
    """The session's counters equal a direct aggregation of its turns and steps, and its
    turn numbers run 1..n without gaps."""
    session = ChatSession.objects.get(pk=session_id)
    turns = ChatTurn.objects.filter(session_id=session_id)
    numbers = sorted(turns.values_list("turn_number", flat=True))
    assert numbers == list(range(1, len(numbers) + 1))
    assert session.turn_count == session.last_turn_number == len(numbers)
    agg = TurnStep.objects.filter(session_id=session_id).aggregate(
        i=Sum("input_tokens"), o=Sum("output_tokens"), c=Sum("cost_usd"), n=Count("id")
    )
    assert session.total_input_tokens == (agg["i"] or 0)
    assert session.total_output_tokens == (agg["o"] or 0)
    assert session.total_calls == agg["n"]
    assert session.total_cost_usd == (agg["c"] or Decimal(0))
    for turn in turns.annotate(steps_n=Count("steps"), steps_in=Sum("steps__input_tokens")):
        assert turn.call_count == turn.steps_n
        assert turn.input_tokens == (turn.steps_in or 0)
    return session


def mixed_batch_items(a: str, b: str, c: str) -> list[Any]:
    """Eleven items covering every per-item outcome; comments give each item's index."""
    bad_steps = [{**SEED_STEPS[0], "input_tokens": -1}]
    return [
        item(a, key="k1"),  # 0 recorded
        item(b, state={"step": "b1"}),  # 1 recorded, no key
        item(a, key="k1"),  # 2 the same key and body again: replay of 0
        item(a, key="single", user_message="earlier"),  # 3 replay across routes
        item(b, steps=bad_steps),  # 4 invalid
        item(c, key="k-expired"),  # 5 expired session
        item(UNKNOWN, key="k-unknown"),  # 6 no such session
        item(a, key="k1", user_message="other"),  # 7 key reused, other body
        item(a, key="single"),  # 8 the single route's key, other body
        item(b, state={"step": "b2"}),  # 9 recorded, state chained from 1
        "not an object",  # 10
    ]


def assert_each_item_status_and_error(results: list[dict[str, Any]], earlier: Any) -> None:
    assert [r["index"] for r in results] == list(range(11))
    assert [r["status"] for r in results] == [201, 201, 201, 201, 400, 410, 404, 422, 422, 201, 400]
    assert [r["replayed"] for r in results] == [False, False, True, True] + [False] * 7
    for result in results:
        assert (result["turn"] is None) == (result["status"] != 201)
        assert (result["error"] is None) == (result["status"] == 201)
    codes = [r["error"]["code"] if r["error"] else None for r in results]
    assert codes[4:9] == ["invalid", "session_expired", "not_found", "idempotency_key_reused",
                          "idempotency_key_reused"]  # fmt: skip
    assert "steps.0.input_tokens" in results[4]["error"]["fields"]
    assert results[2]["turn"] == results[0]["turn"]
    assert results[3]["turn"] == earlier.json()


def assert_recorded_items_answer_like_the_single_route(results: list[dict[str, Any]]) -> None:
    """The recorded items carry what the single route answers: numbers, totals, state."""
    assert results[0]["turn"]["turn"]["turn_number"] == 2
    assert results[0]["turn"]["totals"]["turns"] == 2
    assert [results[i]["turn"]["turn"]["turn_number"] for i in (1, 9)] == [1, 2]
    assert results[9]["turn"]["turn"]["state_before"] == {"step": "b1"}
    assert results[9]["turn"]["turn"]["state_after"] == {"step": "b2"}
    assert results[9]["turn"]["totals"]["turns"] == 2
    assert Decimal(results[0]["turn"]["turn"]["cost_usd"]) == round(expected_cost(SEED_STEPS), 6)


def assert_session_rows_after_mixed_batch(a: str, b: str, c: str) -> None:
    a_row, b_row = assert_totals_match_turns(a), assert_totals_match_turns(b)
    assert (a_row.turn_count, b_row.turn_count) == (2, 2)
    assert a_row.total_input_tokens == 2 * 1250
    assert b_row.state == {"step": "b2"} and b_row.status == "active"
    assert ChatTurn.objects.filter(session_id=c).count() == 0


def assert_recorded_key_replays_and_failed_keys_are_free(
    api: APIClient, a: str, results: list[dict[str, Any]]
) -> None:
    """Keys: the recorded one replays on the single route; failed items' keys are free."""
    replay = post_turn(api, a, turn_body(), key="k1")
    assert replay["Idempotent-Replayed"] == "true"
    assert replay.json() == results[0]["turn"]
    assert not IdempotencyRecord.objects.filter(key__in=["k-expired", "k-unknown"]).exists()
    assert ChatTurn.objects.filter(session_id=a).count() == 2


@pytest.mark.django_db
def test_mixed_batch_answers_each_item_like_the_single_route(api: APIClient) -> None:
    a, b, c = (create_session(api)["id"] for _ in range(3))
    ChatSession.objects.filter(pk=c).update(expires_at=timezone.now() - timedelta(1))
    earlier = post_turn(api, a, turn_body(user_message="earlier"), key="single")
    assert earlier.status_code == 201

    response = post_batch(api, mixed_batch_items(a, b, c))
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert_each_item_status_and_error(results, earlier)
    assert_recorded_items_answer_like_the_single_route(results)
    assert_session_rows_after_mixed_batch(a, b, c)
    assert_recorded_key_replays_and_failed_keys_are_free(api, a, results)


@pytest.mark.django_db
def test_batch_of_another_tenant_session_is_404_for_that_item(
    api: APIClient, other_api: APIClient
) -> None:
    mine, theirs = create_session(api), create_session(other_api)
    results = post_batch(api, [item(theirs["id"]), item(mine["id"])]).json()["results"]
    assert [r["status"] for r in results] == [404, 201]
    assert ChatTurn.objects.filter(session_id=theirs["id"]).count() == 0


@pytest.mark.django_db
def test_budget_flag_is_set_by_the_turn_that_spends_it(api: APIClient) -> None:
    session = create_session(api, budget_tokens=2000)
    results = post_batch(api, [item(session["id"]) for _ in range(3)]).json()["results"]
    warnings = [[w["code"] for w in r["turn"]["warnings"]] for r in results]
    assert warnings == [[], ["budget_exceeded"], ["budget_exceeded"]]
    messages = [r["turn"]["warnings"][0]["message"] for r in results[1:]]
    assert "with this turn" in messages[0] and "with this turn" not in messages[1]
    stored = ChatSession.objects.get(pk=session["id"])
    assert stored.budget_exceeded_at is not None
    assert results[0]["turn"]["budget"] != results[1]["turn"]["budget"]


@pytest.mark.django_db
def test_batch_shape_errors(api: APIClient, settings: Any) -> None:
    assert_error(api.post(BATCH, {"turns": []}, format="json"), 400, "invalid")
    assert_error(api.post(BATCH, {"turn": [{}]}, format="json"), 400, "invalid")
    assert_error(api.post(BATCH, [1, 2], format="json"), 400, "invalid")
    settings.ENGRAM_TURN_BATCH_MAX = 2
    session = create_session(api)
    error = assert_error(post_batch(api, [item(session["id"])] * 3), 413, "request_too_large")
    assert "turns" in error["fields"]
    assert ChatTurn.objects.count() == 0
    assert post_batch(api, [item(session["id"])] * 2).status_code == 200
    assert_error(APIClient().post(BATCH, {"turns": [{}]}, format="json"), 401,
                 "not_authenticated")  # fmt: skip


def _concurrently(workers: int, fn: Any) -> list[Any]:
    barrier = threading.Barrier(workers)

    def run(index: int) -> Any:
        barrier.wait(timeout=30)
        try:
            return fn(index)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(run, range(workers)))


@pytest.mark.django_db(transaction=True)
def test_20_concurrent_batches_on_shared_sessions_give_exact_totals_without_gaps() -> None:
    tenant = tenant_get_or_create(name="race")
    secret = api_key_create(tenant=tenant).secret
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    sessions = [create_session(client)["id"] for _ in range(4)]

    def send(index: int) -> list[int]:
        rng = random.Random(index)
        thread_client = APIClient()
        thread_client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        turns = [
            item(rng.choice(sessions), key=f"b{index}-{n}", user_message=f"{index}/{n}")
            for n in range(15)
        ]
        response = post_batch(thread_client, turns)
        assert response.status_code == 200, response.content
        return [r["status"] for r in response.json()["results"]]

    statuses = _concurrently(20, send)
    assert statuses == [[201] * 15] * 20
    total = 0
    for session_id in sessions:
        session = assert_totals_match_turns(session_id)
        total += session.turn_count
        assert session.total_cost_usd == session.turn_count * expected_cost(SEED_STEPS).quantize(
            Decimal("1e-10")
        )
    assert total == 300 == ChatTurn.objects.count()
    assert IdempotencyRecord.objects.filter(status="completed").count() == 300


@pytest.mark.django_db
def test_both_routes_snapshot_the_cart_read_with_the_lock(api: APIClient) -> None:
    """The lock's statement reads the cart (no query of its own): a turn on a session
    with a cart and one without each store their own cart, in position order."""
    from tests.sessions_app.workspace_helpers import DELL, HP, store_laptops

    with_cart, without = create_session(api)["id"], create_session(api)["id"]
    store_laptops(api, with_cart)
    for mpn in (HP, DELL):
        added = api.post(f"/api/v1/sessions/{with_cart}/selections", {"mpn": mpn}, format="json")
        assert added.status_code == 201, added.content
    assert post_turn(api, with_cart).status_code == 201
    results = post_batch(api, [item(without), item(with_cart)]).json()["results"]
    assert [r["status"] for r in results] == [201, 201]
    carts = {
        (str(turn.session_id), turn.turn_number): [
            s["mpn"] for s in turn.context_after["selections"]
        ]
        for turn in ChatTurn.objects.all()
    }
    assert carts == {(with_cart, 1): [HP, DELL], (with_cart, 2): [HP, DELL], (without, 1): []}
    stored = ChatTurn.objects.get(session_id=with_cart, turn_number=2).context_after
    assert stored["selections"][0] == {"mpn": HP, "quantity": 1, "note": ""}


@pytest.mark.django_db
def test_schema_documents_the_batch_route() -> None:
    from io import StringIO

    from django.core.management import call_command
    from django.test import Client

    err = StringIO()
    call_command("spectacular", "--validate", "--format", "openapi-json",
                 stdout=StringIO(), stderr=err)  # fmt: skip
    assert "batch" not in err.getvalue().lower()  # no warning about this route
    schema = Client().get("/api/schema/", HTTP_ACCEPT="application/json").json()
    post = schema["paths"]["/api/v1/turns/batch"]["post"]
    assert set(post["responses"]) >= {"200", "400", "413"}
    components = schema["components"]["schemas"]
    item = components["TurnBatchItemRequest"]["properties"]
    assert {"session_id", "idempotency_key", "steps", "state"} <= set(item)
    assert item["idempotency_key"]["maxLength"] == 255
    result = components["TurnBatchResult"]["properties"]
    assert set(result) == {"index", "status", "replayed", "turn", "error"}


@pytest.mark.django_db
def test_a_batch_stores_the_same_rows_as_the_single_route(api: APIClient) -> None:
    """The batch writes with COPY: every column, JSON, NULLs and decimals included,
    must read back as the single route's ORM insert stores it."""
    steps = [
        *SEED_STEPS,
        {"step_type": "tool", "input_tokens": 0, "output_tokens": 0, "duration_ms": 5,
         "success": False, "error": "timeout"},
        {"step_type": "llm", "model": "no-such-model", "input_tokens": 10, "output_tokens": 1},
        {"step_type": "llm", "model": "gpt-4o", "usage": {"prompt_tokens": 40,
         "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 8}}},
    ]  # fmt: skip
    body = turn_body(steps=steps, state={"k": [1, "two"]}, metadata={"m": None},
                     reasoning="because", duration_ms=1234)  # fmt: skip
    one, two = create_session(api)["id"], create_session(api)["id"]
    assert post_turn(api, one, body, key="same").status_code == 201
    results = post_batch(api, [{"session_id": two, "idempotency_key": "other", **body}])
    assert results.json()["results"][0]["status"] == 201

    def rows(model: Any, session_id: str, skip: set[str]) -> list[dict[str, Any]]:
        out = []
        for row in model.objects.filter(session_id=session_id).order_by("id").values():
            out.append({k: v for k, v in row.items() if k not in skip})
        return out

    skip = {"id", "session_id", "turn_id", "created_at", "occurred_at", "idempotency_key"}
    assert rows(ChatTurn, one, skip) == rows(ChatTurn, two, skip)
    step_rows = rows(TurnStep, one, skip)
    assert step_rows == rows(TurnStep, two, skip)
    assert [r["cost_usd"] is None for r in step_rows] == [False] * 3 + [False, True, False]
    assert step_rows[3]["usage_raw"] is None and step_rows[3]["error"] == "timeout"
    assert step_rows[5]["usage_raw"]["prompt_tokens"] == 40
    batch_turn = ChatTurn.objects.get(session_id=two)
    assert batch_turn.created_at is not None and batch_turn.idempotency_key == "other"
    assert all(
        s.created_at == batch_turn.created_at for s in TurnStep.objects.filter(turn=batch_turn)
    )
    assert_totals_match_turns(two)


@pytest.mark.django_db
def test_an_item_with_an_unknown_field_refuses_the_whole_batch(api: APIClient) -> None:
    session = create_session(api)
    response = post_batch(api, [item(session["id"]), item(session["id"], budget_token=5)])
    error = assert_error(response, 400, "invalid")
    assert error["fields"] == {"turns.1.budget_token": ["Unknown field."]}
    assert ChatTurn.objects.count() == 0
