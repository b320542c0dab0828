"""Verifying a cart link's token (see `services.cart_links`)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.core.signing import BadSignature, SignatureExpired, TimestampSigner
from django.utils import timezone

from sessions_app.errors import CartLinkExpired, CartLinkInvalid
from sessions_app.models import ChatSession
from sessions_app.selectors.sessions import session_ensure_writable

CART_LINK_SALT = "engram.cart-link.v1"


def cart_link_signer() -> TimestampSigner:
    return TimestampSigner(salt=CART_LINK_SALT)


_SEP = "~"


def cart_link_value(*, session_id: uuid.UUID, expires_at: datetime) -> str:
    """What a link signs: the session and the moment the link ends."""
    return f"{session_id}{_SEP}{int(expires_at.timestamp())}"


@dataclass(frozen=True)
class OpenedCartLink:
    session: ChatSession
    expires_at: datetime


def cart_link_open(*, token: str, now: datetime | None = None) -> OpenedCartLink:
    """The session a token opens and until when: CartLinkInvalid (403) if tampered,
    CartLinkExpired (410) if the link is past its end (its TTL or its session's expiry
    when it was made) or the session is gone; SessionExpired (410) if the session itself
    has expired. Links made before the end was signed in (a bare session id) keep the
    TTL alone."""
    now = now or timezone.now()
    ttl = int(settings.ENGRAM_CART_LINK_TTL_SECONDS)
    try:
        value = cart_link_signer().unsign(token, max_age=ttl)
    except SignatureExpired as exc:
        raise CartLinkExpired() from exc
    except BadSignature as exc:
        raise CartLinkInvalid() from exc
    session_part, _, end_part = value.partition(_SEP)
    try:
        session = ChatSession.objects.get(pk=uuid.UUID(session_part))
        expires_at = (
            datetime.fromtimestamp(int(end_part), tz=UTC) if end_part else session.expires_at
        )
    except (ValueError, OverflowError, ChatSession.DoesNotExist) as exc:
        raise CartLinkExpired("This cart is no longer available.") from exc
    if expires_at <= now:
        raise CartLinkExpired()
    session_ensure_writable(session=session, now=now)
    return OpenedCartLink(session=session, expires_at=min(expires_at, session.expires_at))


def cart_link_session(*, token: str) -> ChatSession:
    """The session a token opens (see `cart_link_open`)."""
    return cart_link_open(token=token).session
