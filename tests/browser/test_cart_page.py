"""Acceptance 4: the cart page in a real headless Chromium against the live server.

The browser edits the cart through the page (remove, reorder, quantity), then reloads:
the page must show the order stored in PostgreSQL. A tampered link is refused.
Playwright's sync API keeps an event loop running in the test's thread, where Django
refuses synchronous ORM calls; database reads during a browser test run in a worker
thread (`in_thread`), which also proves the data is committed."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pytest
from django.db import connection
from playwright.sync_api import Browser, Page, expect
from rest_framework.test import APIClient

from sessions_app.models import SessionSelection
from tests.sessions_app.workspace_helpers import (
    ACER,
    DELL,
    HP,
    LENOVO,
    create_session,
    store_laptops,
)

T = TypeVar("T")


def in_thread(fn: Callable[[], T]) -> T:
    def run() -> T:
        try:
            return fn()
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run).result(timeout=60)


pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def order_on(page: Page) -> list[str]:
    return [
        str(mpn)
        for mpn in page.locator("li.line").evaluate_all("rows => rows.map(r => r.dataset.mpn)")
    ]


def row(page: Page, mpn: str):
    return page.locator(f'li.line[data-mpn="{mpn}"]')


@pytest.fixture
def cart_url(api: APIClient, live_server, settings) -> str:
    settings.ENGRAM_PUBLIC_BASE_URL = live_server.url
    sid = create_session(api)
    store_laptops(api, sid)
    for mpn in (DELL, HP, LENOVO, ACER):
        assert (
            api.post(f"/api/v1/sessions/{sid}/selections", {"mpn": mpn}, format="json").status_code
            == 201
        )
    url = api.post(f"/api/v1/sessions/{sid}/cart-link").json()["url"]
    assert url.startswith(live_server.url)
    return url


def test_edit_the_cart_in_a_browser_and_reload(cart_url: str, browser: Browser) -> None:
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(cart_url)
    expect(page.locator("h1")).to_have_text("Your list")
    assert order_on(page) == [DELL, HP, LENOVO, ACER]
    expect(row(page, DELL)).to_contain_text("Dell XPS 15")
    expect(row(page, DELL)).to_contain_text("$899.00")
    expect(row(page, DELL)).to_contain_text("15.6-inch OLED")
    assert page.evaluate("typeof htmx") == "object"  # the vendored htmx loaded

    # remove the HP
    row(page, HP).get_by_role("button", name="Remove").click()
    expect(page.locator("li.line")).to_have_count(3)
    assert order_on(page) == [DELL, LENOVO, ACER]

    # move the Acer up, above the Lenovo
    row(page, ACER).get_by_role("button", name="Move Acer Swift up").click()
    expect(page.locator("li.line").nth(1)).to_have_attribute("data-mpn", ACER)
    assert order_on(page) == [DELL, ACER, LENOVO]
    expect(row(page, ACER).locator(".position")).to_have_text("2")

    # three of the Lenovo
    row(page, LENOVO).locator("input[name=quantity]").fill("3")
    row(page, LENOVO).get_by_role("button", name="Update").click()
    expect(row(page, LENOVO).locator(".line-total")).to_have_text("$2397.00")
    expect(page.locator(".total strong")).to_have_text("$3995.00")  # 899 + 699 + 3*799

    # a reload shows what the server stored
    page.reload()
    assert order_on(page) == [DELL, ACER, LENOVO]
    expect(row(page, LENOVO).locator("input[name=quantity]")).to_have_value("3")
    assert errors == []
    page.close()


def test_edits_are_stored_server_side(cart_url: str, browser: Browser) -> None:
    page = browser.new_page()
    page.goto(cart_url)
    row(page, DELL).get_by_role("button", name="Move Dell XPS 15 down").click()
    expect(page.locator("li.line").first).to_have_attribute("data-mpn", HP)
    row(page, ACER).get_by_role("button", name="Remove").click()
    expect(page.locator("li.line")).to_have_count(3)
    page.close()
    stored = in_thread(
        lambda: list(SessionSelection.objects.order_by("position").values_list("position", "mpn"))
    )
    assert stored == [(1, HP), (2, DELL), (3, LENOVO)]


def test_a_tampered_link_is_refused(cart_url: str, browser: Browser) -> None:
    token = cart_url.rstrip("/").rsplit("/", 1)[1]
    forged_sig = token[:-3] + ("xyz" if not token.endswith("xyz") else "abc")
    page = browser.new_page()
    response = page.goto(cart_url.replace(token, forged_sig))
    assert response is not None and response.status == 403
    expect(page.locator("h1")).to_have_text("This link is not valid")
    assert page.locator("li.line").count() == 0
    response = page.goto(cart_url.replace(token, "x" + token[1:]))  # another session id
    assert response is not None and response.status == 403
    page.close()
