"""Bad input to turn recording: the documented 4xx with code and field, never a 5xx,
nothing written."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app.models import ChatSession, ChatTurn, IdempotencyRecord, TurnStep
from tests.sessions_app.helpers import SEED_STEPS, assert_error, create_session, turn_body

pytestmark = pytest.mark.django_db


def step(**changes: Any) -> dict[str, Any]:
    base = dict(SEED_STEPS[0])
    base.update(changes)
    return {k: v for k, v in base.items() if v is not ...}


BAD_BODIES: list[tuple[str, Any, str]] = [
    ("no steps", {"user_message": "hi"}, "steps"),
    ("steps not a list", turn_body(steps="many"), "steps"),
    ("step not an object", turn_body(steps=[42]), "steps.0"),
    ("step_type missing", turn_body(steps=[step(step_type=...)]), "steps.0.step_type"),
    ("input_tokens missing", turn_body(steps=[step(input_tokens=...)]), "steps.0.input_tokens"),
    ("output_tokens missing", turn_body(steps=[step(output_tokens=...)]), "steps.0.output_tokens"),
    ("tokens a word", turn_body(steps=[step(input_tokens="many")]), "steps.0.input_tokens"),
    ("tokens fractional", turn_body(steps=[step(input_tokens=1.5)]), "steps.0.input_tokens"),
    ("negative tokens", turn_body(steps=[step(output_tokens=-1)]), "steps.0.output_tokens"),
    ("absurd tokens", turn_body(steps=[step(input_tokens=10**11)]), "steps.0.input_tokens"),
    (
        "cached above input",
        turn_body(steps=[step(), step(cached_tokens=151)]),
        "steps.1.cached_tokens",
    ),
    (
        "reasoning above output",
        turn_body(steps=[step(reasoning_tokens=21)]),
        "steps.0.reasoning_tokens",
    ),
    ("success not bool", turn_body(steps=[step(success="perhaps")]), "steps.0.success"),
    (
        "success true beside an error",
        turn_body(steps=[step(), step(success=True, error="boom")]),
        "steps.1.error",
    ),
    ("negative duration", turn_body(duration_ms=-5), "duration_ms"),
    ("state not an object", turn_body(state=[1, 2]), "state"),
    ("intent_data not an object", turn_body(intent_data="x"), "intent_data"),
    ("model too long", turn_body(steps=[step(model="m" * 300)]), "steps.0.model"),
    (
        "usage not an object",
        turn_body(steps=[step(input_tokens=..., output_tokens=..., usage=7)]),
        "steps.0.usage",
    ),
    (
        "usage with a negative count",
        turn_body(steps=[{"step_type": "x", "usage": {"prompt_tokens": -3}}]),
        "steps.0.usage.prompt_tokens",
    ),
    (
        "usage with a string count",
        turn_body(steps=[{"step_type": "x", "usage": {"input_tokens": "9"}}]),
        "steps.0.usage.input_tokens",
    ),
    (
        "usage of unknown shape",
        turn_body(steps=[{"step_type": "x", "usage": {"tokens": 9}}]),
        "steps.0.usage",
    ),
    (
        "explicit counts disagree with usage",
        turn_body(
            steps=[
                {
                    "step_type": "x",
                    "input_tokens": 100,
                    "usage": {"prompt_tokens": 90, "completion_tokens": 1},
                }
            ]
        ),
        "steps.0.input_tokens",
    ),
    ("too many steps", turn_body(steps=[step()] * 501), "steps"),
]


@pytest.fixture
def counts() -> Callable[[], tuple[int, int, int, int]]:
    def _counts() -> tuple[int, int, int, int]:
        return (
            ChatTurn.objects.count(),
            TurnStep.objects.count(),
            IdempotencyRecord.objects.count(),
            sum(ChatSession.objects.values_list("total_input_tokens", flat=True)),
        )

    return _counts


@pytest.mark.parametrize(("case", "body", "field"), BAD_BODIES, ids=[c[0] for c in BAD_BODIES])
def test_bad_turn_body_is_400_naming_the_field_and_writes_nothing(
    api: APIClient, counts: Callable[[], tuple], case: str, body: Any, field: str
) -> None:
    sid = create_session(api)["id"]
    before = counts()
    response = api.post(
        f"/api/v1/sessions/{sid}/turns", body, format="json", HTTP_IDEMPOTENCY_KEY=f"k-{case}"
    )
    error = assert_error(response, 400, "invalid")
    assert field in error["fields"], error["fields"]
    assert counts() == before


def test_malformed_json_and_wrong_media_type(api: APIClient, counts) -> None:
    sid = create_session(api)["id"]
    before = counts()
    url = f"/api/v1/sessions/{sid}/turns"
    assert_error(api.generic("POST", url, '{"steps": [', content_type="application/json"), 400,
                 "malformed_json")  # fmt: skip
    assert_error(api.generic("POST", url, "steps=1", content_type="text/plain"), 415,
                 "unsupported_media_type")  # fmt: skip
    assert_error(api.generic("POST", url, "[]", content_type="application/json"), 400, "invalid")
    assert counts() == before


def test_ten_megabyte_body_is_413(api: APIClient, counts) -> None:
    sid = create_session(api)["id"]
    before = counts()
    huge = turn_body(user_message="x" * (10 * 1024 * 1024))
    response = api.post(f"/api/v1/sessions/{sid}/turns", huge, format="json")
    assert_error(response, 413, "request_too_large")
    assert counts() == before


def test_unknown_malformed_and_other_tenants_sessions_are_404(
    api: APIClient, other_api: APIClient, counts
) -> None:
    theirs = create_session(other_api)["id"]
    before = counts()
    for sid in ("00000000-0000-0000-0000-000000000000", "not-a-uuid", theirs):
        assert_error(api.post(f"/api/v1/sessions/{sid}/turns", turn_body(), format="json"), 404,
                     "not_found")  # fmt: skip
        assert_error(api.post(f"/api/v1/sessions/{sid}/turns/1/rollback"), 404, "not_found")
        check = {"estimated_tokens": 1}
        response = api.post(f"/api/v1/sessions/{sid}/budget/check", check, format="json")
        assert_error(response, 404, "not_found")
    assert counts() == before


def test_expired_session_is_410(api: APIClient, counts) -> None:
    sid = create_session(api)["id"]
    ChatSession.objects.filter(pk=sid).update(expires_at=timezone.now() - timedelta(hours=1))
    before = counts()
    assert_error(api.post(f"/api/v1/sessions/{sid}/turns", turn_body(), format="json"), 410,
                 "session_expired")  # fmt: skip
    assert counts() == before


def test_no_key_is_401(make_client, counts) -> None:
    before = counts()
    response = make_client(None).post(
        "/api/v1/sessions/00000000-0000-0000-0000-000000000000/turns", turn_body(), format="json"
    )
    assert_error(response, 401, "not_authenticated")
    assert counts() == before


def test_a_step_with_an_error_and_no_success_is_recorded_as_failed(api: APIClient) -> None:
    sid = create_session(api)["id"]
    body = turn_body(
        steps=[
            step(success=..., error="timeout"),
            step(success=..., error=""),
            step(success=False),
        ]
    )
    response = api.post(f"/api/v1/sessions/{sid}/turns", body, format="json")
    assert response.status_code == 201, response.content
    turn = response.json()["turn"]
    assert [s["success"] for s in turn["steps"]] == [False, True, False]
    assert turn["error_count"] == 2
