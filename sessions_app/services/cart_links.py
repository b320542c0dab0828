"""Signed, expiring links to the browser cart page.

The token is the session id signed with a `TimestampSigner` under its own salt, so it
cannot be forged or reused for another purpose, and it expires after
`ENGRAM_CART_LINK_TTL_SECONDS`. Holding the link is the credential: whoever has it can
edit that one cart, nothing else. Verification is `selectors.cart_links`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from sessions_app.models import ChatSession
from sessions_app.selectors.cart_links import cart_link_signer


@dataclass(frozen=True)
class CartLink:
    url: str
    token: str
    expires_at: datetime


def cart_link_create(*, session: ChatSession) -> CartLink:
    token = cart_link_signer().sign(str(session.pk))
    base = str(settings.ENGRAM_PUBLIC_BASE_URL).rstrip("/")
    return CartLink(
        url=base + reverse("cart-page", kwargs={"token": token}),
        token=token,
        expires_at=timezone.now() + timedelta(seconds=int(settings.ENGRAM_CART_LINK_TTL_SECONDS)),
    )
