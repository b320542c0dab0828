"""Admin pages for turns, steps (an erased user's too), idempotency records and prices
render; the periodic schedule names tasks that exist."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from config.celery_app import app
from config.schedules import SCHEDULE
from sessions_app.models import ChatTurn, TurnStep
from sessions_app.services.schedules import schedules_sync
from tests.sessions_app.helpers import create_session, post_turn

pytestmark = pytest.mark.django_db


def test_admin_pages_render(api: APIClient) -> None:
    sid = create_session(api)["id"]
    post_turn(api, sid, key="admin-key")
    user = get_user_model().objects.create_superuser("root", "", "pw-root-123")
    client = Client()
    client.force_login(user)
    turn = ChatTurn.objects.get(session_id=sid)
    step = TurnStep.objects.filter(turn=turn).first()
    for url in (
        "/admin/sessions_app/chatturn/",
        f"/admin/sessions_app/chatturn/{turn.pk}/change/",
        "/admin/sessions_app/turnstep/",
        f"/admin/sessions_app/turnstep/{step.pk}/change/",
        "/admin/sessions_app/idempotencyrecord/",
        "/admin/analytics_app/modelprice/",
        "/admin/analytics_app/modelprice/?q=gemini",
    ):
        assert client.get(url).status_code == 200, url


def test_admin_step_pages_render_the_steps_an_erasure_kept(api: APIClient) -> None:
    sid = create_session(api, user_id="gone")["id"]
    post_turn(api, sid)
    assert api.delete("/api/v1/users/gone").status_code == 200
    step = TurnStep.objects.filter(session__isnull=True).first()
    assert step is not None
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "", "pw-root-123"))
    for url in ("/admin/sessions_app/turnstep/", f"/admin/sessions_app/turnstep/{step.pk}/change/"):
        response = client.get(url)
        assert response.status_code == 200, url
        page = response.content.decode().split('id="content"')[1]
        assert "gone" not in page and "/None/" not in page, url  # no link to a deleted row


def test_schedule_names_registered_tasks_and_syncs() -> None:
    # Every app's tasks, as a worker registers them at start (autodiscovery); importing
    # one app's module passed only when another test had imported the rest.
    app.loader.import_default_modules()

    names = {entry.task for entry in SCHEDULE}
    assert {"sessions_app.expire_sessions", "sessions_app.purge_idempotency_records"} <= names
    assert names <= set(app.tasks)
    assert len(schedules_sync()) == len(SCHEDULE)
