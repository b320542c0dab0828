"""The cockpit's memory pages in a real headless Chromium: a staff member follows the
money from the spend page to a costly session, its user and one of their memories, reads
its history and pins it; the explorer finds memories by meaning and by id; non-staff are
refused. Each page is screenshotted into the `screenshots` directory (see conftest)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from playwright.sync_api import Browser, Page, expect

from memory_app.models import Memory
from tests.cockpit.seed import World, seed_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

T = TypeVar("T")


def in_thread(fn: Callable[[], T]) -> T:
    """ORM reads while Playwright's loop owns this thread (Django refuses them here)."""

    def run() -> T:
        try:
            return fn()
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run).result(timeout=60)


@dataclass(frozen=True)
class Seeded:
    world: World
    non_staff_cookie: str


@pytest.fixture
def seeded(live_server) -> Seeded:
    world = seed_world()
    client = Client()
    assert client.login(username="dev", password="dev-pass-123")
    return Seeded(world, client.cookies[settings.SESSION_COOKIE_NAME].value)


def log_in(page: Page, base: str, next_url: str) -> None:
    page.goto(f"{base}/admin/login/?next={next_url}")
    page.fill("#id_username", "ops")
    page.fill("#id_password", "ops-pass-123")
    page.click("input[type=submit]")
    page.wait_for_url(f"**{next_url}")


def shoot(page: Page, directory: Path, name: str) -> None:
    page.screenshot(path=str(directory / f"{name}.png"), full_page=True)


def test_from_spend_to_session_to_user_to_memory_and_pin_it(
    live_server, seeded: Seeded, browser: Browser, screenshots: Path
) -> None:
    world = seeded.world
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    log_in(page, live_server.url, "/dashboards/spend/")
    expect(page.locator("#top-sessions-chart svg.chart rect")).to_have_count(2)
    shoot(page, screenshots, "spend")

    # The costliest session, from the top-sessions table.
    page.click(f"#top-sessions a.session-link:has-text('{world.costly_id[:8]}')")
    page.wait_for_url(f"**/dashboards/sessions/{world.costly_id}/")
    expect(page.locator("#flagged")).to_contain_text("budget_exceeded")
    expect(page.locator("#turn-4")).to_contain_text("tool timeout after 30s")
    expect(page.locator("#cart")).to_contain_text("XPS-9530")
    expect(page.locator("#context-parts")).to_contain_text("framing")
    page.fill("#id_query", "which screen finish does the user like")
    page.click("#context input[type=submit]")
    expect(page.locator("#context-items")).to_contain_text("memory:")
    shoot(page, screenshots, "session")

    # Its user.
    page.click("#user-link")
    page.wait_for_url(f"**/dashboards/users/{world.tenant_id}/night-owl/")
    expect(page.locator("#sessions")).to_contain_text(world.costly_id[:8])
    expect(page.locator("#by-model")).to_contain_text("claude-sonnet-4")
    expect(page.locator("#memories")).to_contain_text("A-73812")
    shoot(page, screenshots, "user")

    # One of the user's memories: its history, then pin it.
    page.click("#memories a.memory-link:has-text('matte screens')")
    page.wait_for_url(f"**/dashboards/memories/{world.matte_id}/")
    history = page.locator("#history tr.version")
    expect(history).to_have_count(2)
    expect(history.first.locator("del")).to_have_text("screens")
    expect(history.first.locator("ins").first).to_have_text("matte screens, ")
    expect(page.locator("#origin")).to_contain_text("turn 4")
    expect(page.locator("#pinned-state")).to_have_text("not pinned")
    page.click("#pin")
    expect(page.locator("#pinned-state")).to_have_text("pinned")
    expect(page.locator("#unpin")).to_be_visible()
    shoot(page, screenshots, "memory")
    assert errors == []
    page.close()
    assert in_thread(lambda: Memory.objects.get(pk=world.matte_id).pinned) is True


def test_explorer_finds_a_memory_by_paraphrase_and_by_exact_id(
    live_server, seeded: Seeded, browser: Browser, screenshots: Path
) -> None:
    world = seeded.world
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    log_in(page, live_server.url, "/dashboards/memories/")
    newest = page.locator("#results tr.hit")  # no query: the tenant's newest memories
    expect(newest.first).to_be_visible()
    assert newest.count() >= 4

    page.fill("#id_q", "reflective display finish")
    page.click("#explorer-form input[type=submit]")
    hits = page.locator("#results tr.hit")
    expect(hits.first).to_be_visible()
    semantic = [
        (hits.nth(i).inner_text(), float(hits.nth(i).locator("td.num").nth(1).inner_text()))
        for i in range(hits.count())
    ]
    assert "matte screens" in max(semantic, key=lambda row: row[1])[0]
    shoot(page, screenshots, "explorer")

    page.fill("#id_q", world.order_id)
    page.click("#explorer-form input[type=submit]")
    expect(page.locator("#results")).to_contain_text("Exact id")
    page.click("#results a.memory-link")
    page.wait_for_url(f"**/dashboards/memories/{world.order_id}/")
    expect(page.locator("#current-content")).to_contain_text("A-73812")
    page.close()


def test_non_staff_get_403_and_anonymous_the_login_on_every_page(
    live_server, seeded: Seeded, browser: Browser
) -> None:
    world = seeded.world
    paths = [
        f"/dashboards/users/{world.tenant_id}/night-owl/",
        f"/dashboards/sessions/{world.costly_id}/",
        "/dashboards/memories/",
        f"/dashboards/memories/{world.matte_id}/",
    ]
    anonymous = browser.new_page()
    context = browser.new_context()
    context.add_cookies(
        [
            {
                "name": settings.SESSION_COOKIE_NAME,
                "value": seeded.non_staff_cookie,
                "url": live_server.url,
            }
        ]
    )
    member = context.new_page()
    for path in paths:
        anonymous.goto(f"{live_server.url}{path}")
        assert "/admin/login/" in anonymous.url
        expect(anonymous.locator("#id_username")).to_be_visible()
        response = member.goto(f"{live_server.url}{path}")
        assert response is not None and response.status == 403
    context.close()
    anonymous.close()
