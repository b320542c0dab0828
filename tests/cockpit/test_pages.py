"""The cockpit's pages over HTTP with the admin session: what each shows, that staff
actions change the database through the services, who is refused, and that each page
costs a bounded number of queries whatever the data size."""

from __future__ import annotations

import re
from html import unescape as html_unescape
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from memory_app.models import Memory
from tests.cockpit.seed import World

pytestmark = pytest.mark.django_db


def hit_rows(html: str) -> list[tuple[str, float]]:
    """(row text, semantic part) of each search hit."""
    rows = []
    for row in html.split('<tr class="hit">')[1:]:
        cells = re.findall(r'<td class="num">([0-9.]+)</td>', row.split("</tr>")[0])
        rows.append((row.split("</tr>")[0], float(cells[0])))
    return rows


def pages(world: World) -> list[str]:
    return [
        reverse("cockpit-user", args=[world.tenant_id, world.user_id]),
        reverse("cockpit-session", args=[world.costly_id]),
        reverse("cockpit-memories") + f"?tenant={world.tenant_id}",
        reverse("cockpit-memories") + f"?tenant={world.tenant_id}&q=screen+reflections",
        reverse("cockpit-memory", args=[world.matte_id]),
    ]


def test_user_page_shows_sessions_spend_memories_and_summaries(world: World, staff: Client) -> None:
    html = staff.get(
        reverse("cockpit-user", args=[world.tenant_id, world.user_id])
    ).content.decode()
    assert world.costly_id[:8] in html and "budget_exceeded" in html
    assert "4.0000" in html  # eight tool calls at $0.50
    assert "claude-sonnet-4" in html and "gpt-4o-mini" in html
    assert "preference" in html and "I prefer matte screens" in html
    assert "A-73812" in html
    assert f"/admin/memory_app/memory/{world.order_id}/change/" in html
    assert "turns 1-6" in html.lower()
    assert "day-user" not in html  # another user's session


def test_session_page_shows_timeline_context_cart_and_why_flagged(
    world: World, staff: Client
) -> None:
    url = reverse("cockpit-session", args=[world.costly_id])
    html = staff.get(url, {"query": "which screen finish does the user like"}).content.decode()
    assert 'id="turn-8"' in html and "tool timeout after 30s" in html
    assert "budget_exceeded" in html and 'id="flagged"' in html
    assert "XPS-9530" in html and "Dell XPS 15" in html
    assert 'id="context-parts"' in html and "memories" in html
    assert f"/dashboards/memories/{world.matte_id}/" in html  # the memory went into the context
    assert "Summaries and milestones" in html and "Not compacted yet." not in html
    bad = staff.get(url, {"budget": "3"})
    assert bad.status_code == 200 and "budget" in bad.content.decode()


def test_explorer_finds_by_paraphrase_exact_id_and_order_number(
    world: World, staff: Client
) -> None:
    url = reverse("cockpit-memories")
    paraphrase = staff.get(url, {"tenant": world.tenant_id, "q": "reflective display finish"})
    rows = hit_rows(paraphrase.content.decode())
    # No word in common: found by meaning, the closest by cosine of all the hits.
    assert "matte screens" in max(rows, key=lambda row: row[1])[0]
    by_id = staff.get(url, {"tenant": world.tenant_id, "q": world.order_id}).content.decode()
    assert "Exact id" in by_id and "A-73812" in by_id
    by_order = staff.get(url, {"tenant": world.tenant_id, "q": "A-73812"}).content.decode()
    assert "A-73812" in hit_rows(by_order)[0][0]
    pinned_only = staff.get(url, {"tenant": world.tenant_id, "pinned": "yes"}).content.decode()
    assert "No memory matches these filters." in pinned_only
    shared = staff.get(url, {"tenant": world.tenant_id, "scope": "shared"}).content.decode()
    assert "Lisbon" in shared and "matte" not in shared


def test_memory_page_diff_actions_and_database(world: World, staff: Client) -> None:
    url = reverse("cockpit-memory", args=[world.matte_id])
    html = staff.get(url).content.decode()
    assert "<ins>matte screens, </ins>" in html and "<del>screens</del>" in html
    assert "v2 (current)" in html
    assert "user night-owl (its owner)" in html
    action = reverse("cockpit-memory-action", args=[world.matte_id])
    assert staff.post(action, {"action": "pin"}).status_code == 302
    assert Memory.objects.get(pk=world.matte_id).pinned
    staff.post(
        action,
        {
            "action": "edit",
            "content": "I prefer matte displays",
            "importance": 0.8,
            "confidence": 1,
        },
    )
    memory = Memory.objects.get(pk=world.matte_id)
    assert memory.version == 3 and memory.content == "I prefer matte displays"
    assert memory.importance == 0.8 and memory.versions.count() == 2
    memory.embedding_model = "stale"
    memory.save(update_fields=["embedding_model"])
    staff.post(action, {"action": "reembed"})
    assert Memory.objects.get(pk=world.matte_id).embedding_model != "stale"
    staff.post(action, {"action": "delete"})
    assert not Memory.objects.filter(pk=world.matte_id).exists()


def test_actions_need_post_and_csrf(world: World) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.get(username="ops"))
    action = reverse("cockpit-memory-action", args=[world.matte_id])
    assert client.get(action).status_code == 405
    assert client.post(action, {"action": "pin"}).status_code == 403
    assert not Memory.objects.get(pk=world.matte_id).pinned


def test_non_staff_get_403_and_anonymous_the_login(world: World) -> None:
    anonymous = Client()
    member = Client()
    member.force_login(get_user_model().objects.get(username="dev"))
    for url in [*pages(world), reverse("cockpit-memory-action", args=[world.matte_id])]:
        response = anonymous.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
        assert member.get(url).status_code == 403
    assert (
        member.post(
            reverse("cockpit-memory-action", args=[world.matte_id]), {"action": "delete"}
        ).status_code
        == 403
    )
    assert Memory.objects.filter(pk=world.matte_id).exists()


def test_unknown_ids_are_404(world: World, staff: Client) -> None:
    assert staff.get(reverse("cockpit-user", args=[999999, "x"])).status_code == 404
    missing = "00000000-0000-0000-0000-000000000000"
    assert staff.get(reverse("cockpit-session", args=[missing])).status_code == 404
    assert staff.get(reverse("cockpit-memory", args=[missing])).status_code == 404
    explorer = staff.get(reverse("cockpit-memories"), {"tenant": world.tenant_id, "q": missing})
    assert f"No memory with id <code>{missing}</code>" in explorer.content.decode()


def test_spend_page_and_admin_session_page_link_to_the_cockpit(world: World, staff: Client) -> None:
    spend = staff.get(reverse("dashboard-spend")).content.decode()
    assert 'id="top-sessions-chart"' in spend and "night-owl · " in spend
    assert reverse("cockpit-session", args=[world.costly_id]) in spend
    assert reverse("cockpit-user", args=[world.tenant_id, world.user_id]) in spend
    admin_page = staff.get(
        reverse("admin:sessions_app_chatsession_change", args=[world.costly_id])
    ).content.decode()
    assert reverse("cockpit-session", args=[world.costly_id]) in admin_page


def test_every_admin_link_on_the_pages_opens(world: World, staff: Client) -> None:
    """The numbers link to the admin objects behind them: each link resolves for staff."""
    links: set[str] = set()
    for url in pages(world):
        html = staff.get(url).content.decode()
        links |= {html_unescape(href) for href in re.findall(r'href="(/admin/[^"]+)"', html)}
    assert len(links) > 20
    for link in sorted(links):
        response = staff.get(link)
        assert response.status_code == 200, link
        assert "?e=1" not in response.get("Location", ""), link


def test_session_page_shows_turns_recalled_from_earlier_sessions(
    world: World, staff: Client, django_capture_on_commit_callbacks: Any
) -> None:
    from sessions_app.models import Tenant
    from sessions_app.services.sessions import session_create
    from sessions_app.services.turn_recording import turn_record

    tenant = Tenant.objects.get(pk=world.tenant_id)
    earlier = session_create(tenant=tenant, user_id="returning", agent_id="shop")
    with django_capture_on_commit_callbacks(execute=True):
        turn_record(
            tenant=tenant,
            session_id=earlier.pk,
            steps=[],
            user_message="My monitor budget is 400 euros at most.",
            assistant_response="Noted, I will keep offers under 400 euros.",
        )
    now = session_create(tenant=tenant, user_id="returning", agent_id="shop")
    url = reverse("cockpit-session", args=[now.pk])
    html = staff.get(url, {"query": "What is my monitor budget?"}).content.decode()
    assert "<td>past_turn</td>" in html
    link = reverse("cockpit-session", args=[earlier.pk])
    assert f'class="past-turn" href="{link}"' in html
    assert "400 euros at most" in html
