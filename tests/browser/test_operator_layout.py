"""The operators' pages look like one product, in a real headless Chromium: the admin's
index, an admin list and every cockpit page carry the Engram header, the user tools and
the one navigation bar, whose links all answer 200; the admin index lists the
dashboards; no link, button or heading is squeezed to a letter per line; every
character shown has an installed font. Each page is screenshotted (full page) into the
`screenshots` directory (see conftest) for review."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.urls import reverse
from playwright.sync_api import Browser, Page, expect

from memory_app.models import Memory
from memory_app.services.memories import memory_set_pinned
from tests.browser.layout_checks import missing_glyphs, squeezed_text
from tests.cockpit.seed import World, seed_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NAVIGATION = ["Admin", "Spend", "Memory explorer", "Sessions", "Users"]


@dataclass(frozen=True)
class Seeded:
    world: World
    pages: dict[str, str]  # screenshot name -> path


@pytest.fixture
def seeded(live_server) -> Seeded:
    """The cockpit's world with one memory pinned, so that the pinned marker shows in the
    explorer and on the user's page; written before Playwright starts its event loop."""
    world = seed_world()
    memory_set_pinned(memory=Memory.objects.get(pk=world.order_id), pinned=True)
    explorer = reverse("cockpit-memories")
    pages = {
        "admin-index": reverse("admin:index"),
        "admin-sessions": reverse("admin:sessions_app_chatsession_changelist"),
        "spend": reverse("dashboard-spend"),
        "explorer": f"{explorer}?tenant={world.tenant_id}",
        "explorer-search": f"{explorer}?tenant={world.tenant_id}&q=reflective+display+finish",
        "memory": reverse("cockpit-memory", args=[world.order_id]),
        "session": reverse("cockpit-session", args=[world.costly_id]),
        "user": reverse("cockpit-user", args=[world.tenant_id, world.user_id]),
    }
    return Seeded(world, pages)


def logged_in_page(browser: Browser, base: str) -> Page:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(f"{base}/admin/login/?next=/admin/")
    page.fill("#id_username", "ops")
    page.fill("#id_password", "ops-pass-123")
    page.click("input[type=submit]")
    page.wait_for_url("**/admin/")
    return page


def assert_answers_200(page: Page, base: str, hrefs: list[str]) -> None:
    for href in hrefs:
        response = page.request.get(href if href.startswith("http") else f"{base}{href}")
        assert response.status == 200, (href, response.status)


def test_every_operator_page_has_the_engram_header_navigation_and_an_unbroken_layout(
    live_server, seeded: Seeded, browser: Browser, screenshots: Path
) -> None:
    page = logged_in_page(browser, live_server.url)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    nav_targets: set[str] = set()
    for name, path in seeded.pages.items():
        response = page.goto(f"{live_server.url}{path}")
        assert response is not None and response.status == 200, name
        page.screenshot(path=str(screenshots / f"{name}.png"), full_page=True)

        expect(page.locator("#site-name")).to_have_text("Engram")
        expect(page).to_have_title(re.compile("Engram"))
        expect(page.locator("#user-tools")).to_contain_text("Log out")
        assert "Django" not in page.locator("#container").inner_text(), name
        nav = page.locator("#operator-nav a")
        assert nav.all_inner_texts() == NAVIGATION, name
        nav_targets.update(a.get_attribute("href") or "" for a in nav.all())
        assert squeezed_text(page) == [], name
        assert missing_glyphs(page) == set(), name

    assert_answers_200(page, live_server.url, sorted(nav_targets))
    assert errors == []
    page.close()


def test_the_navigation_marks_the_page_it_is_on(
    live_server, seeded: Seeded, browser: Browser
) -> None:
    page = logged_in_page(browser, live_server.url)
    for path, current in (
        (seeded.pages["admin-index"], "Admin"),
        (seeded.pages["spend"], "Spend"),
        (reverse("cockpit-memories"), "Memory explorer"),
        (seeded.pages["admin-sessions"], "Sessions"),
    ):
        page.goto(f"{live_server.url}{path}")
        expect(page.locator("#operator-nav a[aria-current=page]")).to_have_text(current)
    page.close()


def test_the_admin_index_lists_the_dashboards_readably(
    live_server, seeded: Seeded, browser: Browser, screenshots: Path
) -> None:
    page = logged_in_page(browser, live_server.url)
    dashboards = page.locator("#engram-dashboards th a")
    assert dashboards.all_inner_texts() == ["Spend", "Memory explorer"]
    for link in dashboards.all():
        box = link.bounding_box()
        assert box is not None
        font_size, line_height = link.evaluate(
            "a => [getComputedStyle(a).fontSize, getComputedStyle(a).lineHeight].map(parseFloat)"
        )
        assert box["height"] < 2 * line_height, box  # each name on one line
        assert box["width"] > 2 * font_size, box  # as wide as a few letters at least
    hrefs = [a.get_attribute("href") or "" for a in dashboards.all()]
    assert hrefs == [reverse("dashboard-spend"), reverse("cockpit-memories")]
    assert_answers_200(page, live_server.url, hrefs)
    page.screenshot(path=str(screenshots / "admin-index-dashboards.png"), full_page=True)

    page.click("#engram-dashboards a:has-text('Memory explorer')")
    page.wait_for_url("**/dashboards/memories/")
    expect(page.locator("#memory-explorer h1")).to_have_text("Memory explorer")
    page.close()


def test_pinned_memories_are_marked_in_words(live_server, seeded: Seeded, browser: Browser) -> None:
    page = logged_in_page(browser, live_server.url)
    page.goto(f"{live_server.url}{seeded.pages['explorer']}")
    pinned_rows = page.locator("#results tr.hit:has(.pinned)")
    expect(pinned_rows).to_have_count(1)
    expect(pinned_rows).to_contain_text("A-73812")
    expect(pinned_rows.locator(".pinned")).to_have_text("pinned")
    page.goto(f"{live_server.url}{seeded.pages['user']}")
    expect(page.locator("#memories .pinned")).to_have_text("pinned")
    page.close()


def test_the_checks_catch_a_squeezed_link_and_a_glyph_without_a_font(browser: Browser) -> None:
    """The admin index's old dashboards row (a link in a cell the admin's stylesheet
    squeezes next to an unwrappable description) and an emoji, which no installed font
    covers: both checks must name them."""
    page = browser.new_page(viewport={"width": 1000, "height": 600})
    page.set_content(
        '<table style="width: 300px"><tr>'
        '<th style="width: 100%; word-break: break-word"><a href="#">Spend</a></th>'
        '<td style="white-space: nowrap">Tokens and cost over time, by model, agent and '
        "step type; top users and sessions</td></tr></table>"
        "<p>memory <span>\N{PUSHPIN}</span> · pinned</p>"
    )
    squeezed = squeezed_text(page)
    assert any('<a> "Spend"' in line for line in squeezed), squeezed
    assert missing_glyphs(page) == {"\N{PUSHPIN}"}
    page.close()
