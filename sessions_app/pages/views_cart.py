"""The end user's cart page, opened from a signed link (`POST …/cart-link`).

Server-side state: every change goes through the same selection services as the API
and lands in PostgreSQL, so a reload or a server restart shows the stored cart. htmx
swaps the cart fragment in place; without JavaScript the same forms post and redirect.
CSRF applies (htmx sends the token in `X-CSRFToken` via `hx-headers`)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from sessions_app.errors import ApplicationError, CartLinkExpired, CartLinkInvalid, SessionExpired
from sessions_app.models import ChatSession
from sessions_app.selectors.cart_links import cart_link_open, cart_link_session
from sessions_app.selectors.workspace import cart_total, selection_lines
from sessions_app.services.selections import selection_move, selection_remove, selection_update

MAX_PAGE_QUANTITY = 999


def _secure(response: HttpResponse) -> HttpResponse:
    # The token in the URL is the credential: keep it out of Referer headers and caches.
    response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "no-store"
    response["X-Robots-Tag"] = "noindex"
    return response


def _error_page(request: HttpRequest, error: ApplicationError) -> HttpResponse:
    if isinstance(error, CartLinkInvalid):
        title, status = "This link is not valid", 403
        text = "The cart link was changed or is incomplete. Ask the assistant for a new one."
    elif isinstance(error, (CartLinkExpired, SessionExpired)):
        title, status = "This cart link has expired", 410
        text = "Cart links work for a limited time. Ask the assistant for a fresh link."
    else:
        title, status = "Something is wrong with this cart", error.status
        text = error.message
    return _secure(
        render(request, "cart/error.html", {"title": title, "text": text}, status=status)
    )


def _context(session: ChatSession, token: str, message: str = "") -> dict[str, Any]:
    lines = selection_lines(session=session)
    return {
        "session": session,
        "token": token,
        "lines": lines,
        "total": cart_total(lines),
        "message": message,
        "max_quantity": MAX_PAGE_QUANTITY,
    }


@require_GET
def cart_page(request: HttpRequest, token: str) -> HttpResponse:
    try:
        link = cart_link_open(token=token)
    except ApplicationError as error:
        return _error_page(request, error)
    context = {**_context(link.session, token), "link_expires_at": link.expires_at}
    return _secure(render(request, "cart/page.html", context))


def _apply(session: ChatSession, data: Any) -> str:
    """Run the posted action; returns a message for the user ("" when all went well)."""
    action = data.get("action", "")
    mpn = data.get("mpn", "")
    if action == "remove":
        selection_remove(session=session, mpn=mpn)
    elif action in ("up", "down"):
        selection_move(session=session, mpn=mpn, direction=action)
    elif action == "quantity":
        try:
            quantity = int(data.get("quantity", ""))
        except ValueError:
            return "Quantity must be a whole number."
        if not 1 <= quantity <= MAX_PAGE_QUANTITY:
            return f"Quantity must be between 1 and {MAX_PAGE_QUANTITY}."
        selection_update(session=session, mpn=mpn, quantity=quantity)
    else:
        return "Unknown action."
    return ""


@require_POST
def cart_update(request: HttpRequest, token: str) -> HttpResponse:
    is_htmx = request.headers.get("HX-Request") == "true"
    try:
        session = cart_link_session(token=token)
    except ApplicationError as error:
        if is_htmx:  # htmx swaps only 2xx: send the browser to the full error page
            response = HttpResponse(status=200)
            response["HX-Refresh"] = "true"
            return response
        return _error_page(request, error)
    try:
        message = _apply(session, request.POST)
    except SessionExpired as error:
        return _error_page(request, error)
    except ApplicationError as error:
        message = error.message  # e.g. the line was removed in another tab
    if is_htmx:
        return _secure(render(request, "cart/_cart.html", _context(session, token, message)))
    return HttpResponseRedirect(reverse("cart-page", kwargs={"token": token}))
