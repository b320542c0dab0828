"""Verifying a cart link's token (see `services.cart_links`)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.signing import BadSignature, SignatureExpired, TimestampSigner

from sessions_app.errors import CartLinkExpired, CartLinkInvalid
from sessions_app.models import ChatSession
from sessions_app.selectors.sessions import session_ensure_writable

CART_LINK_SALT = "engram.cart-link.v1"


def cart_link_signer() -> TimestampSigner:
    return TimestampSigner(salt=CART_LINK_SALT)


def cart_link_session(*, token: str) -> ChatSession:
    """The session a token opens: CartLinkInvalid (403) if tampered, CartLinkExpired
    (410) if the link is past its TTL or the session is gone; SessionExpired (410) if
    the session itself has expired."""
    try:
        value = cart_link_signer().unsign(token, max_age=int(settings.ENGRAM_CART_LINK_TTL_SECONDS))
    except SignatureExpired as exc:
        raise CartLinkExpired() from exc
    except BadSignature as exc:
        raise CartLinkInvalid() from exc
    try:
        session = ChatSession.objects.get(pk=uuid.UUID(value))
    except (ValueError, ChatSession.DoesNotExist) as exc:
        raise CartLinkExpired("This cart is no longer available.") from exc
    session_ensure_writable(session=session)
    return session
