"""Resume by identity: `POST /sessions` with `resume: true` finds the tenant's unexpired
session for (user_id, agent_id, external_session_id) or creates exactly one, even under a race."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app.models import ChatSession
from sessions_app.services.api_keys import IssuedKey

BODY = {"user_id": "maria", "agent_id": "cli", "external_session_id": "conv-1", "resume": True}


@pytest.mark.django_db
def test_resume_creates_then_finds(api: APIClient, other_api: APIClient) -> None:
    first = api.post("/api/v1/sessions", BODY, format="json")
    assert first.status_code == 201, first.content
    again = api.post("/api/v1/sessions", {**BODY, "metadata": {"x": 1}}, format="json")
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    # Another agent, another external id, another tenant: other sessions.
    other_agent = api.post("/api/v1/sessions", {**BODY, "agent_id": "web"}, format="json")
    other_ext = api.post(
        "/api/v1/sessions", {**BODY, "external_session_id": "conv-2"}, format="json"
    )
    foreign = other_api.post("/api/v1/sessions", BODY, format="json")
    ids = {r.json()["id"] for r in (first, other_agent, other_ext, foreign)}
    assert len(ids) == 4
    assert {other_agent.status_code, other_ext.status_code, foreign.status_code} == {201}
    # Without resume, the same identity is refused while its session is live: resume it.
    plain = api.post("/api/v1/sessions", {**BODY, "resume": False}, format="json")
    assert plain.status_code == 409 and plain.json()["error"]["code"] == "conflict"


@pytest.mark.django_db
def test_another_user_with_the_same_conversation_id_gets_their_own_session(
    api: APIClient,
) -> None:
    # An agent numbering its conversations per user: Maria's "conv-1" and Ivan's "conv-1".
    maria = api.post("/api/v1/sessions", {**BODY, "state": {"cart": "maria's"}}, format="json")
    assert maria.status_code == 201, maria.content
    ivan = api.post("/api/v1/sessions", {**BODY, "user_id": "ivan"}, format="json")
    assert ivan.status_code == 201, ivan.content
    assert ivan.json()["id"] != maria.json()["id"]
    assert ivan.json()["user_id"] == "ivan" and ivan.json()["state"] == {}
    for user, session in (("maria", maria), ("ivan", ivan)):
        again = api.post("/api/v1/sessions", {**BODY, "user_id": user}, format="json")
        assert again.status_code == 200 and again.json()["id"] == session.json()["id"]


@pytest.mark.django_db
def test_an_expired_session_is_not_resumed(api: APIClient) -> None:
    first = api.post("/api/v1/sessions", BODY, format="json").json()
    ChatSession.objects.filter(pk=first["id"]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    again = api.post("/api/v1/sessions", BODY, format="json")
    assert again.status_code == 201
    assert again.json()["id"] != first["id"]


@pytest.mark.django_db
def test_resume_needs_an_external_id(api: APIClient) -> None:
    response = api.post(
        "/api/v1/sessions", {"user_id": "u", "agent_id": "a", "resume": True}, format="json"
    )
    assert response.status_code == 400
    assert "external_session_id" in response.json()["error"]["fields"]


@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_resumes_make_one_session(issued_key: IssuedKey) -> None:
    barrier = threading.Barrier(50)
    results: list[tuple[int, str]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def resume() -> None:
        try:
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued_key.secret}")
            barrier.wait(timeout=30)
            response = client.post("/api/v1/sessions", BODY, format="json")
            with lock:
                results.append((response.status_code, response.json()["id"]))
        except BaseException as exc:  # reported by the main thread
            with lock:
                errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=resume) for _ in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert errors == []
    assert sorted(code for code, _ in results) == [200] * 49 + [201]
    assert len({sid for _, sid in results}) == 1
    assert ChatSession.objects.filter(external_session_id="conv-1").count() == 1
