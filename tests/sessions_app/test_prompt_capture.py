"""Seed 000: optional capture of each step's prompt and completion (off by
default; per tenant or session; size-capped; erased with the user), exported as
chat-format JSONL over HTTP and by a management command."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import override_settings
from rest_framework.test import APIClient

from sessions_app.models import Tenant, TurnStep
from tests.sessions_app.helpers import post_turn, turn_body
from tests.sessions_app.workspace_helpers import assert_error, create_session

pytestmark = pytest.mark.django_db

PROMPT = [
    {"role": "system", "content": "You are a shopping assistant."},
    {"role": "user", "content": "Find laptops under $1000"},
]


def captured_turn(api: APIClient, sid: str, **step: Any) -> None:
    body = turn_body([{"step_type": "response", "model": "gpt-4o-mini", "input_tokens": 30,
                       "output_tokens": 12, "prompt": PROMPT,
                       "completion": "Here are five laptops.", **step}])  # fmt: skip
    response = post_turn(api, sid, body)
    assert response.status_code == 201, response.content


def jsonl(api: APIClient, sid: str) -> list[dict[str, Any]]:
    response = api.get(f"/api/v1/sessions/{sid}/turns.jsonl")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/jsonl"
    text = b"".join(response.streaming_content).decode()
    return [json.loads(line) for line in text.splitlines()]


def test_capture_is_off_by_default_and_on_per_session(api: APIClient) -> None:
    off = create_session(api)
    captured_turn(api, off)
    step = TurnStep.objects.get(session_id=off)
    assert step.prompt is None and step.completion == ""
    assert jsonl(api, off) == []

    on = create_session(api, capture_prompts=True)
    captured_turn(api, on)
    [example] = jsonl(api, on)
    assert example["messages"] == [*PROMPT, {"role": "assistant",
                                             "content": "Here are five laptops."}]  # fmt: skip
    assert example["metadata"]["turn_number"] == 1 and example["metadata"]["model"] == "gpt-4o-mini"
    turn = api.get(f"/api/v1/sessions/{on}/turns/1").json()
    assert turn["steps"][0]["prompt"] == PROMPT

    # A rolled-back turn is not an example.
    assert api.post(f"/api/v1/sessions/{on}/turns/1/rollback").status_code == 200
    assert jsonl(api, on) == []


def test_the_tenant_turns_it_on_and_a_session_can_turn_it_off(
    api: APIClient, tenant: Tenant
) -> None:
    Tenant.objects.filter(pk=tenant.pk).update(capture_prompts=True)
    sid = create_session(api)
    captured_turn(api, sid)
    assert len(jsonl(api, sid)) == 1
    quiet = create_session(api, capture_prompts=False)
    captured_turn(api, quiet)
    assert jsonl(api, quiet) == []


@override_settings(ENGRAM_CAPTURE_PROMPTS=True, ENGRAM_CAPTURE_MAX_CHARS=120)
def test_capture_is_size_capped_newest_messages_first(api: APIClient) -> None:
    sid = create_session(api)
    captured_turn(api, sid)
    step = TurnStep.objects.get(session_id=sid)
    assert step.prompt == [PROMPT[1]]  # the system message did not fit; the newest did
    assert step.completion == "Here are five laptops."
    captured_turn(api, sid, completion="x" * 500)
    step = TurnStep.objects.filter(session_id=sid).latest("id")
    assert step.completion == "x" * 120 and step.prompt == []


@override_settings(ENGRAM_CAPTURE_PROMPTS=True)
def test_captured_text_is_erased_with_the_user_and_exported_by_command(
    api: APIClient, other_api: APIClient, tmp_path: Any
) -> None:
    sid = create_session(api)
    captured_turn(api, sid)
    assert_error(other_api.get(f"/api/v1/sessions/{sid}/turns.jsonl"), 404, "not_found")
    out = tmp_path / "steps.jsonl"
    call_command("export_steps_jsonl", "--tenant", "acme", "--output", str(out),
                 stderr=StringIO())  # fmt: skip
    [line] = out.read_text().splitlines()
    assert json.loads(line)["messages"][-1]["content"] == "Here are five laptops."
    stdout = StringIO()
    call_command("export_steps_jsonl", "--tenant", "acme", "--session", sid, stdout=stdout,
                 stderr=StringIO())  # fmt: skip
    assert len(stdout.getvalue().splitlines()) == 1

    assert api.delete("/api/v1/users/u1").status_code == 200
    assert not TurnStep.objects.filter(prompt__isnull=False).exists()
    robot = {"step_type": "r", "input_tokens": 0, "output_tokens": 0,
             "prompt": [{"role": "robot", "content": "x"}]}  # fmt: skip
    bad = post_turn(api, create_session(api), turn_body([robot]))
    assert_error(bad, 400, "invalid")
