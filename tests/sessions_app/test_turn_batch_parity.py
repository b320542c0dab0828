"""The batch route decides each turn as the single route does (one `turn_draft` for
both): session rotation, prompt/completion capture and the per-turn ceilings. Each test
records the same turns through both routes and compares what a client sees and what is
stored. Also: the single route's planned 201 rendering equals DRF's."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import override_settings
from rest_framework.renderers import JSONRenderer
from rest_framework.test import APIClient

from sessions_app.api.serializers_turns import TurnRecordedSerializer
from sessions_app.api.views_turns import turn_recorded_body
from sessions_app.models import ChatSession, ChatTurn, Tenant, TurnStep
from sessions_app.services.sessions import session_create
from sessions_app.services.turn_recording import TurnRecorded, turn_record
from sessions_app.services.turn_totals import StepInput
from sessions_app.usage import TokenCounts
from tests.sessions_app.helpers import assert_error, create_session, post_turn, turn_body

pytestmark = pytest.mark.django_db

BATCH = "/api/v1/turns/batch"
STEP = [
    {"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 600, "output_tokens": 400}
]  # fmt: skip  1000 tokens a turn
PROMPT = [
    {"role": "system", "content": "You are a shopping assistant."},
    {"role": "user", "content": "Find laptops under $1000 with a long battery life"},
]


def batch(api: APIClient, turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    response = api.post(BATCH, {"turns": turns}, format="json")
    assert response.status_code == 200, response.content
    return response.json()["results"]  # type: ignore[no-any-return]


def single(api: APIClient, sid: str, body: dict[str, Any]) -> Any:
    return post_turn(api, sid, body)


def test_a_batch_rotates_a_session_past_its_threshold_as_the_single_route_does(
    api: APIClient,
) -> None:
    bodies = [turn_body(STEP, user_message=f"message {n}", state={"n": n}) for n in range(4)]

    by_single = create_session(api, rotate_after_tokens=2000, budget_tokens=10_000)["id"]
    singles = [single(api, by_single, body) for body in bodies]
    by_batch = create_session(api, rotate_after_tokens=2000, budget_tokens=10_000)["id"]
    results = batch(api, [{"session_id": by_batch, **body} for body in bodies])

    # Turns 1-2 in the session; the third opens a successor; the fourth, still naming the
    # archived session, is refused with the successor's id: on both routes.
    assert [r.status_code for r in singles] == [201, 201, 201, 410]
    assert [r["status"] for r in results] == [201, 201, 201, 410]
    rotated = results[2]["turn"]
    successor = rotated["session"]["id"]
    assert successor != by_batch and rotated["session"]["previous_session_id"] == by_batch
    assert rotated["turn"]["turn_number"] == 1
    assert [w["code"] for w in rotated["warnings"]] == ["session_rotated"]
    assert [w["code"] for w in singles[2].json()["warnings"]] == ["session_rotated"]
    refused = results[3]["error"]
    assert refused["code"] == "session_expired"
    assert refused["successor_session_id"] == successor
    assert (
        assert_error(singles[3], 410, "session_expired")["successor_session_id"]
        == (singles[2].json()["session"]["id"])
    )

    for sid, new in ((by_single, singles[2].json()["session"]["id"]), (by_batch, successor)):
        old = ChatSession.objects.get(pk=sid)
        assert old.status == "archived" and old.total_tokens == 2000 and old.turn_count == 2
        follower = ChatSession.objects.get(pk=new)
        assert follower.previous_session_id == old.pk
        assert follower.turn_count == 1 and follower.total_tokens == 1000
        assert follower.budget_tokens == 8000  # what was left, not a fresh allowance
        assert follower.state == {"n": 2}
        assert list(ChatTurn.objects.filter(session=follower).values_list("turn_number")) == [(1,)]


def test_a_batch_item_for_the_successor_continues_it(api: APIClient) -> None:
    sid = create_session(api, rotate_after_tokens=1000)["id"]
    assert single(api, sid, turn_body(STEP)).status_code == 201
    [rotated] = batch(api, [{"session_id": sid, **turn_body(STEP)}])
    successor = rotated["turn"]["session"]["id"]
    [again] = batch(api, [{"session_id": successor, **turn_body(STEP)}])
    # The successor passed 1000 tokens with its first turn: it rotates in turn.
    assert again["status"] == 201
    assert again["turn"]["session"]["previous_session_id"] == successor


def captured(**step: Any) -> dict[str, Any]:
    return turn_body(
        [{**STEP[0], "prompt": PROMPT, "completion": "Here are five laptops.", **step}]
    )


def stored_capture(session_id: str) -> list[tuple[Any, str]]:
    return list(
        TurnStep.objects.filter(session_id=session_id)
        .order_by("id")
        .values_list("prompt", "completion")
    )


def test_a_batch_captures_prompts_where_the_single_route_does(api: APIClient) -> None:
    on = [create_session(api, capture_prompts=True)["id"] for _ in range(2)]
    off = [create_session(api)["id"] for _ in range(2)]
    for sid in (on[0], off[0]):
        assert single(api, sid, captured()).status_code == 201
    results = batch(api, [{"session_id": sid, **captured()} for sid in (on[1], off[1])])
    assert [r["status"] for r in results] == [201, 201]

    assert stored_capture(on[1]) == stored_capture(on[0]) == [(PROMPT, "Here are five laptops.")]
    assert stored_capture(off[1]) == stored_capture(off[0]) == [(None, "")]
    assert results[0]["turn"]["turn"]["steps"][0]["prompt"] == PROMPT
    assert results[1]["turn"]["turn"]["steps"][0]["prompt"] is None


def test_a_batch_follows_the_tenant_switch_and_the_size_cap(api: APIClient) -> None:
    Tenant.objects.filter(name="acme").update(capture_prompts=True)
    sids = [create_session(api)["id"] for _ in range(2)]
    completion = "Here are five laptops."
    cap = len(completion) + len(json.dumps(PROMPT[1], ensure_ascii=False)) + 5
    with override_settings(ENGRAM_CAPTURE_MAX_CHARS=cap):
        assert single(api, sids[0], captured()).status_code == 201
        assert batch(api, [{"session_id": sids[1], **captured()}])[0]["status"] == 201
    # The completion, then the newest message that fits; the system prompt is dropped.
    expected = [([PROMPT[1]], completion)]
    assert stored_capture(sids[1]) == stored_capture(sids[0]) == expected


@override_settings(ENGRAM_TURN_MAX_TOKENS=1500)
def test_a_batch_flags_turns_over_the_per_turn_ceilings(api: APIClient) -> None:
    big = turn_body([STEP[0], STEP[0]])  # 2000 tokens
    small = turn_body(STEP)
    a, b = create_session(api)["id"], create_session(api)["id"]
    singles = [single(api, a, body).json() for body in (small, big)]
    results = batch(api, [{"session_id": b, **body} for body in (small, big)])

    assert [r["turn"]["turn"]["over_limit"] for r in results] == ["", "tokens"]
    assert [s["turn"]["over_limit"] for s in singles] == ["", "tokens"]
    codes = [[w["code"] for w in r["turn"]["warnings"]] for r in results]
    assert codes == [[w["code"] for w in s["warnings"]] for s in singles]
    assert "turn_over_limit" in codes[1]
    assert list(
        ChatTurn.objects.filter(session_id=b).order_by("turn_number").values_list("over_limit")
    ) == [("",), ("tokens",)]
    with override_settings(ENGRAM_TURN_MAX_TOKENS=0, ENGRAM_TURN_MAX_COST_USD=0.0001):
        [costly] = batch(api, [{"session_id": b, **big}])
    assert costly["turn"]["turn"]["over_limit"] == "cost"


def _drf(result: TurnRecorded) -> Any:
    return json.loads(JSONRenderer().render(TurnRecordedSerializer().to_representation(result)))


def _planned(result: TurnRecorded) -> Any:
    return json.loads(JSONRenderer().render(turn_recorded_body()(result)))


def steps_filling_the_optional_parts() -> list[StepInput]:
    """A captured, over-the-ceiling response; an unpriced model; a failed tool call."""
    return [
        StepInput(
            step_type="response",
            model="gpt-4o-mini",
            counts=TokenCounts(input_tokens=1400, output_tokens=200, cached_tokens=300),
            prompt=PROMPT,
            completion="done",
            usage_raw={"prompt_tokens": 900},
        ),
        StepInput(step_type="llm", model="no-such-model", counts=TokenCounts(input_tokens=5)),
        StepInput(
            step_type="tool",
            counts=TokenCounts(),
            success=False,
            error="timeout",
            tool_output="{}",
            duration_ms=7,
        ),
    ]


def four_turns_past_budget_and_rotation(tenant: Tenant) -> list[TurnRecorded]:
    """Four turns on a capturing session whose budget runs out and which rotates."""
    session = session_create(
        tenant=tenant,
        user_id="u",
        agent_id="a",
        budget_tokens=1200,
        budget_usd=None,
        rotate_after_tokens=2500,
        capture_prompts=True,
    )
    steps = steps_filling_the_optional_parts()
    results: list[TurnRecorded] = []
    for n in range(4):
        results.append(
            turn_record(
                tenant=tenant,
                session_id=results[-1].session.pk if results else session.pk,
                steps=steps,
                user_message="hello",
                state={"n": n},
                metadata={"m": [1, None]},
            )
        )
    return results


@override_settings(ENGRAM_TURN_MAX_TOKENS=1500)
def test_the_planned_201_body_is_drf_s_rendering(tenant: Tenant) -> None:
    """Every key and value, over turns that fill the optional parts: warnings (price
    missing, over the ceiling, budget spent, rotated), captured prompts, null errors,
    tool outputs, a rolled-back-at of None, decimals and dates."""
    results = four_turns_past_budget_and_rotation(tenant)
    codes = {w.code for result in results for w in result.warnings}
    assert {"price_missing", "turn_over_limit", "budget_exceeded", "session_rotated"} <= codes
    for result in results:
        planned = _planned(result)
        assert planned == _drf(result)
        assert list(planned) == list(_drf(result))  # the same order too
        assert list(planned["turn"]) == list(_drf(result)["turn"])
