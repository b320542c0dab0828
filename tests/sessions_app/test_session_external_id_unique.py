"""A live conversation id is one session: `POST /sessions` without `resume` for a user and
agent that have a live session of that `external_session_id` answers 409 naming the field
and the session to resume, also when creates race, and the database refuses a second live
row however it is written. An ended session frees its id."""

from __future__ import annotations

import importlib
import threading
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app.models import ChatSession, SessionStatus
from sessions_app.services.api_keys import IssuedKey

BODY = {"user_id": "maria", "agent_id": "cli", "external_session_id": "chat-1"}


@pytest.mark.django_db
def test_a_second_create_of_a_live_external_id_is_a_conflict_naming_the_session(
    api: APIClient,
) -> None:
    first = api.post("/api/v1/sessions", BODY, format="json")
    assert first.status_code == 201, first.content
    again = api.post("/api/v1/sessions", {**BODY, "state": {"x": 1}}, format="json")
    assert again.status_code == 409, again.content
    error = again.json()["error"]
    assert error["code"] == "conflict" and list(error["fields"]) == ["external_session_id"]
    assert error["session_id"] == first.json()["id"] and "resume" in error["message"]
    listed = api.get("/api/v1/sessions", {"external_session_id": "chat-1"}).json()["results"]
    assert [row["id"] for row in listed] == [first.json()["id"]]
    resumed = api.post("/api/v1/sessions", {**BODY, "resume": True}, format="json")
    assert resumed.status_code == 200 and resumed.json()["id"] == first.json()["id"]
    # Another agent or user with the same id is another conversation.
    for other in ({"agent_id": "web"}, {"user_id": "ivan"}):
        assert api.post("/api/v1/sessions", {**BODY, **other}, format="json").status_code == 201


@pytest.mark.django_db
def test_a_patch_to_a_live_external_id_is_a_conflict(api: APIClient) -> None:
    first = api.post("/api/v1/sessions", BODY, format="json").json()
    second = api.post("/api/v1/sessions", {**BODY, "external_session_id": "chat-2"}, format="json")
    moved = api.patch(
        f"/api/v1/sessions/{second.json()['id']}", {"external_session_id": "chat-1"}, format="json"
    )
    assert moved.status_code == 409, moved.content
    assert moved.json()["error"]["session_id"] == first["id"]


@pytest.mark.django_db
def test_a_lapsed_session_frees_its_external_id_and_is_marked_expired(api: APIClient) -> None:
    first = api.post("/api/v1/sessions", BODY, format="json").json()
    ChatSession.objects.filter(pk=first["id"]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    again = api.post("/api/v1/sessions", BODY, format="json")
    assert again.status_code == 201, again.content
    assert ChatSession.objects.get(pk=first["id"]).status == SessionStatus.EXPIRED


@pytest.mark.django_db
def test_the_database_refuses_a_second_live_session_of_an_external_id(api: APIClient) -> None:
    first = ChatSession.objects.get(
        pk=api.post("/api/v1/sessions", BODY, format="json").json()["id"]
    )
    twin = {
        "tenant": first.tenant, "user_id": "maria", "agent_id": "cli",
        "external_session_id": "chat-1", "ttl_seconds": 60, "expires_at": first.expires_at,
        "last_active_at": first.last_active_at,
    }  # fmt: skip
    with pytest.raises(IntegrityError), transaction.atomic():
        ChatSession.objects.create(**twin)
    archived = ChatSession.objects.create(**twin, status=SessionStatus.ARCHIVED)
    assert archived.pk != first.pk


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_creates_of_one_external_id_make_one_session(
    issued_key: IssuedKey,
) -> None:
    barrier = threading.Barrier(20)
    results: list[tuple[int, str]] = []
    lock = threading.Lock()

    def create() -> None:
        try:
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued_key.secret}")
            barrier.wait(timeout=30)
            response = client.post("/api/v1/sessions", BODY, format="json")
            body = response.json()
            with lock:
                results.append((response.status_code, body.get("id") or body["error"]["code"]))
        finally:
            connection.close()

    threads = [threading.Thread(target=create) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert sorted(code for code, _ in results) == [201] + [409] * 19, results
    assert ChatSession.objects.filter(external_session_id="chat-1").count() == 1


@pytest.mark.django_db
def test_the_migration_keeps_the_newest_live_duplicate_and_archives_the_others(
    api: APIClient,
) -> None:
    """The migration's data step, over rows written as they could be before the index:
    the newest live session of an id stays live, older live twins are archived, none is
    deleted, and the index can then be built."""
    migration = importlib.import_module(
        "sessions_app.migrations.0006_session_live_external_id_unique"
    )
    first = ChatSession.objects.get(
        pk=api.post("/api/v1/sessions", BODY, format="json").json()["id"]
    )
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX session_live_external_id_unique")
    fields = {
        "tenant": first.tenant, "user_id": "maria", "agent_id": "cli",
        "external_session_id": "chat-1", "ttl_seconds": 60, "expires_at": first.expires_at,
        "last_active_at": first.last_active_at,
    }  # fmt: skip
    middle = ChatSession.objects.create(**fields, status=SessionStatus.ACTIVE)
    newest = ChatSession.objects.create(**fields)
    ended = ChatSession.objects.create(**fields, status=SessionStatus.EXPIRED)
    other = ChatSession.objects.create(**{**fields, "agent_id": "web"})
    with connection.cursor() as cursor:
        cursor.execute(migration.ARCHIVE_OLDER_DUPLICATES)
    statuses = dict(ChatSession.objects.values_list("pk", "status"))
    assert statuses == {
        first.pk: SessionStatus.ARCHIVED,
        middle.pk: SessionStatus.ARCHIVED,
        newest.pk: SessionStatus.OPENED,
        ended.pk: SessionStatus.EXPIRED,
        other.pk: SessionStatus.OPENED,
    }
