"""Every cockpit page renders for a user whose id holds "/", and its link to the user
page (and the admin session page's) opens that user's page."""

from __future__ import annotations

import re
from html import unescape as html_unescape

import pytest
from django.test import Client
from django.urls import reverse

from analytics_app.services.rollups import rollups_fill
from sessions_app.models import Tenant
from tests.analytics_app.factories import Step, make_session, record_turn
from tests.cockpit.seed import World

pytestmark = pytest.mark.django_db

USER = "team/alice"


def _user_links(html: str) -> set[str]:
    return {html_unescape(href) for href in re.findall(r'href="(/dashboards/users/[^"]+)"', html)}


def test_pages_of_a_user_id_with_a_slash_render_and_link_to_the_user(
    world: World, staff: Client
) -> None:
    tenant = Tenant.objects.get(pk=world.tenant_id)
    session = make_session(tenant, user_id=USER)
    # Costlier than the world's sessions, so it is among the spend page's top rows.
    record_turn(session, [Step(model="claude-sonnet-4", input_tokens=90_000)])
    rollups_fill()

    spend = staff.get(reverse("dashboard-spend"))
    assert spend.status_code == 200
    page = staff.get(reverse("cockpit-session", args=[session.pk]))
    assert page.status_code == 200
    admin_page = staff.get(reverse("admin:sessions_app_chatsession_change", args=[session.pk]))
    links = (
        _user_links(spend.content.decode())
        & _user_links(page.content.decode())
        & _user_links(admin_page.content.decode())
    )
    (link,) = [link for link in links if "alice" in link]
    user_page = staff.get(link)
    assert user_page.status_code == 200
    assert str(session.pk)[:8] in user_page.content.decode()
    assert f"User {USER}" in page.content.decode()
