"""The cart page a link opens: signed, expiring links that never outlive their session,
a page that refuses tampered and CSRF-less requests, and that works without
JavaScript."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import pytest
from django.core.signing import TimestampSigner, b62_encode
from django.test import Client, override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from sessions_app.models import ChatSession
from sessions_app.selectors.cart_links import CART_LINK_SALT
from tests.sessions_app.cart_helpers import add, cart, stocked_session
from tests.sessions_app.workspace_helpers import DELL, HP, create_session, store_laptops

pytestmark = pytest.mark.django_db


@pytest.fixture
def sid(api: APIClient) -> str:
    return stocked_session(api)


@override_settings(ENGRAM_PUBLIC_BASE_URL="https://shop.example.com/")
def test_cart_link_opens_the_page(api: APIClient, sid: str) -> None:
    add(api, sid, mpn=DELL)
    r = api.post(f"/api/v1/sessions/{sid}/cart-link")
    assert r.status_code == 201
    url = r.json()["url"]
    assert url.startswith("https://shop.example.com/cart/")
    path = url.removeprefix("https://shop.example.com")
    page = Client().get(path)
    assert page.status_code == 200
    assert b"Dell XPS 15" in page.content and b"$899.00" in page.content
    assert page["Referrer-Policy"] == "no-referrer"
    assert b"unpkg" not in page.content and b"/static/vendor/htmx/htmx.min.js" in page.content


def test_cart_page_refuses_tampered_expired_and_csrfless(api: APIClient, sid: str) -> None:
    add(api, sid, mpn=DELL)
    path = api.post(f"/api/v1/sessions/{sid}/cart-link").json()["url"].split("8000", 1)[1]
    token = path.split("/")[2]
    tampered = path.replace(token, token[:-2] + ("AA" if not token.endswith("AA") else "BB"))
    assert Client().get(tampered).status_code == 403
    assert b"not valid" in Client().get(tampered).content
    other_session = path.replace(token[:36], "00000000-0000-0000-0000-000000000000")
    assert Client().get(other_session).status_code == 403

    class PastSigner(TimestampSigner):
        def timestamp(self) -> str:
            return b62_encode(int(time.time()) - 8 * 24 * 3600)

    old = PastSigner(salt=CART_LINK_SALT).sign(sid)
    expired = Client().get(f"/cart/{old}/")
    assert expired.status_code == 410 and b"expired" in expired.content

    strict = Client(enforce_csrf_checks=True)
    assert strict.get(path).status_code == 200
    r = strict.post(path + "update", {"action": "remove", "mpn": DELL})
    assert r.status_code == 403
    assert cart(api, sid) == [(1, DELL, 1)]


def test_cart_link_never_outlives_its_session(api: APIClient) -> None:
    """A session with a 60 s TTL gets a link that says it ends with the session (not in
    7 days), the page says until when, and once the session has expired the link
    answers the error page, even if the session is extended by a later write."""
    short = create_session(api, ttl_seconds=60)
    store_laptops(api, short)
    add(api, short, mpn=DELL)
    session = ChatSession.objects.get(pk=short)
    body = api.post(f"/api/v1/sessions/{short}/cart-link").json()
    link_end = timezone.datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00"))
    assert link_end <= session.expires_at
    assert session.expires_at - link_end < timedelta(seconds=1)
    path = body["url"].split("8000", 1)[1]
    page = Client().get(path)
    assert page.status_code == 200
    shown = page.content.decode().split('id="link-expiry"')[1].split("</p>")[0]
    assert link_end.strftime("%Y-%m-%d %H:%M") in shown

    # A long-lived session: the link ends after the configured lifetime instead.
    with override_settings(ENGRAM_CART_LINK_TTL_SECONDS=120):
        long_lived = create_session(api, ttl_seconds=3600)
        end = api.post(f"/api/v1/sessions/{long_lived}/cart-link").json()["expires_at"]
    end_at = timezone.datetime.fromisoformat(end.replace("Z", "+00:00"))
    assert timedelta(seconds=100) < end_at - timezone.now() <= timedelta(seconds=120)

    # The session expires: the link is the error page, never the cart.
    ChatSession.objects.filter(pk=short).update(expires_at=timezone.now() - timedelta(seconds=1))
    gone = Client().get(path)
    assert gone.status_code == 410 and b"expired" in gone.content and b"Dell" not in gone.content
    # Extended again later (a new turn): the old link stays past its stated end.
    ChatSession.objects.filter(pk=short).update(expires_at=timezone.now() + timedelta(hours=1))
    ChatSession.objects.filter(pk=short).update(status="active")
    with override_settings(ENGRAM_CART_LINK_TTL_SECONDS=3600):
        from sessions_app.errors import CartLinkExpired
        from sessions_app.selectors.cart_links import cart_link_open

        with pytest.raises(CartLinkExpired):
            cart_link_open(token=path.split("/")[2], now=link_end + timedelta(seconds=1))


def test_cart_page_without_javascript_posts_and_redirects(api: APIClient, sid: str) -> None:
    for mpn in (DELL, HP):
        add(api, sid, mpn=mpn)
    path = api.post(f"/api/v1/sessions/{sid}/cart-link").json()["url"].split("8000", 1)[1]
    browser = Client()
    assert browser.post(path + "update", {"action": "down", "mpn": DELL}).status_code == 302
    assert (
        browser.post(
            path + "update", {"action": "quantity", "mpn": HP, "quantity": "4"}
        ).status_code
        == 302
    )
    assert (
        browser.post(
            path + "update", {"action": "quantity", "mpn": HP, "quantity": "0"}
        ).status_code
        == 302
    )
    assert cart(api, sid) == [(1, HP, 4), (2, DELL, 1)]
    fragment = browser.post(
        path + "update", {"action": "remove", "mpn": "NOPE"}, HTTP_HX_REQUEST="true"
    )
    assert fragment.status_code == 200 and b"not in the cart" in fragment.content


def test_cart_link_lasts_the_ttl_asked_for(api: APIClient, sid: str) -> None:
    before = timezone.now()
    r = api.post(f"/api/v1/sessions/{sid}/cart-link", {"ttl_seconds": 120}, format="json")
    assert r.status_code == 201, r.content
    expires_at = datetime.fromisoformat(r.json()["expires_at"])
    assert before + timedelta(seconds=118) <= expires_at <= timezone.now() + timedelta(seconds=120)
    default = api.post(f"/api/v1/sessions/{sid}/cart-link", {}, format="json")
    assert datetime.fromisoformat(default.json()["expires_at"]) > expires_at + timedelta(hours=1)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"ttl_seconds": -1}, "ttl_seconds"),
        ({"ttl_seconds": 59}, "ttl_seconds"),
        ({"ttl_seconds": 7 * 24 * 3600 + 1}, "ttl_seconds"),
        ({"ttl_seconds": "60"}, "ttl_seconds"),
        ({"bogus": 1}, "bogus"),
    ],
)
def test_cart_link_refuses_a_bad_body_naming_the_field(
    api: APIClient, sid: str, body: dict[str, object], field: str
) -> None:
    r = api.post(f"/api/v1/sessions/{sid}/cart-link", body, format="json")
    assert r.status_code == 400, r.content
    assert list(r.json()["error"]["fields"]) == [field]
