"""The erasure's answer says what it did: the rows it deleted under `deleted`, and the
user's steps, which stay as anonymous spend, under `anonymised`; the schema and the
admin say the same."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from sessions_app.hooks import ERASED_USER_ID
from sessions_app.models import Tenant, TurnStep
from tests.sessions_app.helpers import SEED_STEPS, create_session, post_turn, turn_body

pytestmark = pytest.mark.django_db


def _user_with_turns(api: APIClient, user_id: str, *step_lists: list[dict[str, Any]]) -> str:
    session = create_session(api, user_id=user_id)["id"]
    for steps in step_lists:
        assert post_turn(api, session, turn_body(steps)).status_code == 201
    return str(session)


def test_the_erasure_answers_the_steps_it_kept_as_anonymised_not_deleted(
    api: APIClient,
) -> None:
    _user_with_turns(api, "alice", SEED_STEPS, SEED_STEPS[:1])
    _user_with_turns(api, "alice", SEED_STEPS[1:])
    _user_with_turns(api, "bob", SEED_STEPS)
    alices_steps = len(SEED_STEPS) + 1 + len(SEED_STEPS) - 1

    response = api.delete("/api/v1/users/alice")
    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["anonymised"] == {"steps": alices_steps}
    assert "steps" not in answer["deleted"]
    assert answer["deleted"]["sessions"] == 2 and answer["deleted"]["turns"] == 3

    assert not TurnStep.objects.filter(user_id="alice").exists()
    kept = TurnStep.objects.filter(user_id=ERASED_USER_ID)
    assert kept.count() == alices_steps
    assert set(kept.values_list("session_id", "turn_id")) == {(None, None)}
    assert TurnStep.objects.filter(user_id="bob").count() == len(SEED_STEPS)


def test_erasing_a_user_without_steps_answers_none_anonymised(api: APIClient) -> None:
    create_session(api, user_id="quiet")
    answer = api.delete("/api/v1/users/quiet").json()
    assert answer["anonymised"] == {"steps": 0} and "steps" not in answer["deleted"]


def test_the_schema_of_the_erasure_answer_names_the_anonymised_steps(api: APIClient) -> None:
    response = Client(SERVER_NAME="localhost").get("/api/schema/", HTTP_ACCEPT="application/json")
    components = response.json()["components"]["schemas"]
    erasure = components["UserErasure"]
    assert set(erasure["required"]) == {"user_id", "deleted", "anonymised"}
    reference = erasure["properties"]["anonymised"]["allOf"][0]["$ref"]
    anonymised = components[reference.rsplit("/", 1)[-1]]
    assert anonymised["required"] == ["steps"]
    assert anonymised["properties"]["steps"]["type"] == "integer"
    assert "steps (" not in erasure["properties"]["deleted"]["description"]


def test_the_admin_erasure_says_the_steps_stay_as_anonymous_spend(
    api: APIClient, tenant: Tenant, admin_client: Client
) -> None:
    session = _user_with_turns(api, "leaver", SEED_STEPS)
    url = "/admin/sessions_app/chatsession/"
    selection = {"action": "erase_users", "_selected_action": [session]}
    confirm = admin_client.post(url, selection)
    assert confirm.status_code == 200
    assert b"Their steps stay as anonymous spend" in confirm.content
    done = admin_client.post(url, {**selection, "confirm": "yes"}, follow=True)
    expected = f"Erased 1 user(s); their {len(SEED_STEPS)} step(s) stay as anonymous spend."
    assert expected.encode() in done.content
    assert TurnStep.objects.filter(user_id=ERASED_USER_ID).count() == len(SEED_STEPS)
