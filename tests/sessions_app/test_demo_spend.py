"""The demo holds sessions with turns and steps across several models and agents."""

from __future__ import annotations

import pytest
from django.db.models import Count

from sessions_app.models import ChatSession, ChatTurn, Tenant, TurnStep
from sessions_app.services.demo import DEMO_TENANT, demo_load

pytestmark = pytest.mark.django_db


def test_demo_has_spend_across_models_and_agents() -> None:
    assert demo_load(admin_username="demo-admin", admin_password="pw-demo-123") is not None
    tenant = Tenant.objects.get(name=DEMO_TENANT)
    steps = TurnStep.objects.filter(tenant=tenant)
    models = set(steps.exclude(model="").values_list("model", flat=True))
    agents = set(steps.values_list("agent_id", flat=True))
    assert {"gemini-1.5-flash", "gemini-1.5-pro", "gpt-4o", "claude-sonnet-4-5"} <= models
    assert len(agents) >= 3
    sessions = ChatSession.objects.filter(tenant=tenant).annotate(n=Count("turns"))
    assert sessions.count() >= 6 and all(session.n >= 2 for session in sessions)
    assert ChatTurn.objects.filter(tenant=tenant).count() == sum(s.turn_count for s in sessions)
    assert steps.filter(price_missing=False).exists() and steps.filter(price_missing=True).exists()
    assert steps.filter(cached_tokens__gt=0).exists()
    assert sessions.filter(budget_exceeded_at__isnull=False).exists()
    # Loaded once.
    assert demo_load(admin_username="demo-admin") is None
