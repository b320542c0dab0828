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


def cart_link_value(session: ChatSession) -> str:
    """What a link signs: the session id, and its link generation once links were
    revoked (a link from before any revocation signs the bare id: generation 0)."""
    generation = session.cart_link_generation
    return str(session.pk) if generation == 0 else f"{session.pk}:{generation}"


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
    session_part, _, generation = value.partition(":")
    try:
        session = ChatSession.objects.get(pk=uuid.UUID(session_part))
    except (ValueError, ChatSession.DoesNotExist) as exc:
        raise CartLinkExpired("This cart is no longer available.") from exc
    if int(generation or 0) != session.cart_link_generation:
        raise CartLinkExpired("This cart link was revoked.")
    session_ensure_writable(session=session)
    return session
