"""Signed, expiring links to the browser cart page.

The token is the session id signed with a `TimestampSigner` under its own salt, so it
cannot be forged or reused for another purpose, and it expires after
`ENGRAM_CART_LINK_TTL_SECONDS` or when the session expires, whichever comes first: the
signed value carries that moment, so a link never outlives the session it was made for
(a later turn that extends the session does not extend a link already handed out; the
agent makes a new one). Holding the link is the credential: whoever has it can edit
that one cart, nothing else. Verification is `selectors.cart_links`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.urls import reverse
from django.utils import timezone

from sessions_app.models import ChatSession
from sessions_app.selectors.cart_links import cart_link_signer, cart_link_value


@dataclass(frozen=True)
class CartLink:
    url: str
    token: str
    expires_at: datetime


def cart_link_create(
    *, session: ChatSession, ttl_seconds: int | None = None, now: datetime | None = None
) -> CartLink:
    """A link that works for `ttl_seconds` (default ENGRAM_CART_LINK_TTL_SECONDS, which
    the serializer also holds it under), and never past the session's expiry."""
    now = now or timezone.now()
    seconds = ttl_seconds if ttl_seconds is not None else settings.ENGRAM_CART_LINK_TTL_SECONDS
    lifetime = now + timedelta(seconds=int(seconds))
    # Whole seconds, rounded down: the link never claims a moment past the session's end.
    expires_at = min(lifetime, session.expires_at).replace(microsecond=0)
    token = cart_link_signer().sign(
        cart_link_value(
            session_id=session.pk,
            expires_at=expires_at,
            generation=session.cart_link_generation,
        )
    )
    base = str(settings.ENGRAM_PUBLIC_BASE_URL).rstrip("/")
    return CartLink(
        url=base + reverse("cart-page", kwargs={"token": token}),
        token=token,
        expires_at=expires_at,
    )


@transaction.atomic
def cart_links_revoke(*, session: ChatSession) -> None:
    """Every link issued so far for this session stops working at once (410
    `cart_link_expired`, "revoked"); links made afterwards work. The links are not
    stored: each carries the session's generation, which this moves on."""
    ChatSession.objects.filter(pk=session.pk).update(
        cart_link_generation=F("cart_link_generation") + 1
    )
    session.refresh_from_db(fields=["cart_link_generation"])
