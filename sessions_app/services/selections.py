"""The cart: ordered lines with contiguous positions 1..n, one per MPN.

Every writer locks the session row first (`session_lock_for_write`), so concurrent
adds, removes and reorders of one cart run one after another and positions never gap
or collide; the deferred unique constraint on (session, position) is the backstop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from django.db import transaction
from django.db.models import F

from sessions_app.errors import Conflict, ErrorCode, InvalidInput, NotFound
from sessions_app.models import ChatSession, SessionSelection
from sessions_app.selectors.workspace import CartLine, component_get, selection_line
from sessions_app.services.lifecycle import session_lock_for_write
from sessions_app.services.references import reference_resolve

MAX_CART_LINES = 500

UNSET: object = object()


def _not_in_cart(mpn: str) -> NotFound:
    return NotFound(
        f"{mpn!r} is not in the cart.",
        code=ErrorCode.NOT_IN_CART,
        fields={"mpn": ["Not in the cart."]},
    )


@transaction.atomic
def selection_add(
    *,
    session: ChatSession,
    mpn: str | None = None,
    ref: str | None = None,
    quantity: int = 1,
    note: str = "",
) -> tuple[CartLine, bool]:
    """Add a fetched item at the end of the cart; (line, created). Adding an item that
    is already there changes nothing and answers the existing line, so an agent that
    retries "add the Dell" cannot double it. An item named by `ref` also becomes the
    focus, as it would by resolving it: the user is talking about it."""
    session = session_lock_for_write(session=session)
    if ref is not None:
        resolved = reference_resolve(session=session, ref=ref)
        mpn = resolved.component.mpn
        if session.focus_mpn != mpn:
            session.focus_mpn = mpn
            session.save(update_fields=["focus_mpn", "updated_at"])
    else:
        mpn = component_get(session=session, mpn=str(mpn)).mpn
    if SessionSelection.objects.filter(session=session, mpn=mpn).exists():
        return selection_line(session=session, mpn=mpn), False
    count = SessionSelection.objects.filter(session=session).count()
    if count >= MAX_CART_LINES:
        raise Conflict(
            f"The cart holds at most {MAX_CART_LINES} lines.",
            code=ErrorCode.CART_FULL,
        )
    SessionSelection.objects.create(
        tenant_id=session.tenant_id,
        session=session,
        mpn=mpn,
        position=count + 1,
        quantity=quantity,
        note=note,
    )
    return selection_line(session=session, mpn=mpn), True


@transaction.atomic
def selection_remove(*, session: ChatSession, mpn: str) -> None:
    """Remove a line; the lines after it move up one, so positions stay 1..n."""
    session = session_lock_for_write(session=session)
    selection = SessionSelection.objects.filter(session=session, mpn=mpn).first()
    if selection is None:
        raise _not_in_cart(mpn)
    selection.delete()
    SessionSelection.objects.filter(session=session, position__gt=selection.position).update(
        position=F("position") - 1
    )


@transaction.atomic
def selection_update(
    *,
    session: ChatSession,
    mpn: str,
    quantity: int | None = None,
    note: str | None = None,
) -> CartLine:
    """Change a line's quantity and/or note (None: unchanged)."""
    session = session_lock_for_write(session=session)
    selection = SessionSelection.objects.filter(session=session, mpn=mpn).first()
    if selection is None:
        raise _not_in_cart(mpn)
    changed = []
    if quantity is not None:
        selection.quantity = quantity
        changed.append("quantity")
    if note is not None:
        selection.note = note
        changed.append("note")
    if changed:
        selection.save(update_fields=changed)
    return selection_line(session=session, mpn=mpn)


@transaction.atomic
def selection_reorder(*, session: ChatSession, mpns: Sequence[str]) -> None:
    """Put the cart in the order of `mpns`, which must name every line exactly once:
    a partial list would leave the order of the rest undefined."""
    session = session_lock_for_write(session=session)
    selections = {s.mpn: s for s in SessionSelection.objects.filter(session=session)}
    duplicates = sorted({m for m in mpns if list(mpns).count(m) > 1})
    missing = sorted(set(selections) - set(mpns))
    unknown = sorted(set(mpns) - set(selections))
    if duplicates or missing or unknown:
        problems = []
        if duplicates:
            problems.append(f"repeated: {', '.join(duplicates)}")
        if missing:
            problems.append(f"missing: {', '.join(missing)}")
        if unknown:
            problems.append(f"not in the cart: {', '.join(unknown)}")
        raise InvalidInput(
            "mpns must list every MPN in the cart exactly once.",
            fields={"mpns": ["; ".join(problems)]},
        )
    changed = []
    for position, mpn in enumerate(mpns, start=1):
        selection = selections[mpn]
        if selection.position != position:
            selection.position = position
            changed.append(selection)
    SessionSelection.objects.bulk_update(changed, ["position"])


@transaction.atomic
def selection_move(*, session: ChatSession, mpn: str, direction: Literal["up", "down"]) -> None:
    """Swap a line with its neighbour (the cart page's up/down buttons); a no-op at
    either end."""
    session = session_lock_for_write(session=session)
    order = list(
        SessionSelection.objects.filter(session=session)
        .order_by("position")
        .values_list("mpn", flat=True)
    )
    if mpn not in order:
        raise _not_in_cart(mpn)
    index = order.index(mpn)
    other = index - 1 if direction == "up" else index + 1
    if not 0 <= other < len(order):
        return
    order[index], order[other] = order[other], order[index]
    selection_reorder(session=session, mpns=order)
