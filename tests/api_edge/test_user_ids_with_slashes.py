"""A user id may hold "/" (the API accepts it in every body): it is erased and exported
over REST with the id percent-encoded as one path segment, which the server receives
decoded. The two user routes stay unambiguous: GET exists only on `users/{id}/export`,
DELETE only on `users/{id}`, so a DELETE whose path ends in "/export" erases the user
whose id ends so."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from rest_framework.test import APIClient

from tests.sessions_app.helpers import create_session, post_turn, turn_body

pytestmark = pytest.mark.django_db


def _user_with_a_turn(api: APIClient, user_id: str) -> str:
    session = create_session(api, user_id=user_id)
    assert post_turn(api, session["id"], turn_body()).status_code == 201
    return str(session["id"])


def _exported_sessions(api: APIClient, user_id: str) -> list[str]:
    response = api.get(f"/api/v1/users/{quote(user_id, safe='')}/export")
    assert response.status_code == 200, response.content
    return [s["id"] for s in response.json()["sessions"]]


def test_a_user_id_with_a_slash_is_exported_and_erased(api: APIClient) -> None:
    session_id = _user_with_a_turn(api, "team/alice")
    _user_with_a_turn(api, "team")
    assert _exported_sessions(api, "team/alice") == [session_id]

    response = api.delete(f"/api/v1/users/{quote('team/alice', safe='')}")
    assert response.status_code == 200, response.content
    assert response.json()["user_id"] == "team/alice"
    assert response.json()["deleted"]["sessions"] == 1
    assert response.json()["anonymised"]["steps"] == len(turn_body()["steps"])
    assert _exported_sessions(api, "team/alice") == []
    assert len(_exported_sessions(api, "team")) == 1  # the user "team" is someone else


def test_a_delete_ending_in_export_erases_the_user_whose_id_ends_so(api: APIClient) -> None:
    literal = _user_with_a_turn(api, "x/export")
    plain = _user_with_a_turn(api, "x")
    assert _exported_sessions(api, "x/export") == [literal]  # GET users/x/export/export
    assert _exported_sessions(api, "x") == [plain]  # GET users/x/export

    response = api.delete(f"/api/v1/users/{quote('x/export', safe='')}")
    assert response.status_code == 200, response.content
    assert response.json()["user_id"] == "x/export"
    assert _exported_sessions(api, "x/export") == []
    assert _exported_sessions(api, "x") == [plain]


@pytest.mark.parametrize("user_id", ["/", "a//b", "/lead", "trail/", "a/%2F/b"])
def test_odd_slashed_user_ids_round_trip(api: APIClient, user_id: str) -> None:
    session_id = _user_with_a_turn(api, user_id)
    assert _exported_sessions(api, user_id) == [session_id]
    response = api.delete(f"/api/v1/users/{quote(user_id, safe='')}")
    assert response.status_code == 200, response.content
    assert response.json()["user_id"] == user_id
    assert response.json()["deleted"]["sessions"] == 1


@pytest.mark.parametrize("head", ["a" * 249, "a\x00b"])
def test_a_delete_ending_in_export_with_an_id_out_of_rule_answers_400(
    api: APIClient, head: str
) -> None:
    response = api.delete(f"/api/v1/users/{quote(head, safe='')}/export")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "invalid"
    assert "user_id" in response.json()["error"]["fields"]


def test_a_delete_ending_in_export_erases_only_the_callers_tenants_user(
    api: APIClient, other_api: APIClient
) -> None:
    mine = _user_with_a_turn(api, "y/export")
    response = other_api.delete(f"/api/v1/users/{quote('y/export', safe='')}")
    assert response.status_code == 200, response.content
    assert response.json()["deleted"]["sessions"] == 0
    assert _exported_sessions(api, "y/export") == [mine]
