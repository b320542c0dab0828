"""Reads of a session's workspace (its working set: fetched items, focus, the cart) and
what the resolver needs. "Context" in Engram means the assembled LLM context
(`memory_app`); the REST routes keep their names."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import F, QuerySet

from sessions_app.errors import ErrorCode, NotFound
from sessions_app.models import ChatSession, SessionComponent, SessionSelection
from sessions_app.resolution import Item, attribute_value


def component_list(*, session: ChatSession) -> QuerySet[SessionComponent]:
    """Every fetched item: the last results by position, then the rest newest first."""
    return SessionComponent.objects.filter(session=session).order_by(
        F("position").asc(nulls_last=True), "-fetched_at", "id"
    )


def component_get(*, session: ChatSession, mpn: str) -> SessionComponent:
    """A fetched item of this session, or 404 `item_not_found`: the cart and the focus
    may only hold items the agent actually showed."""
    component = SessionComponent.objects.filter(session=session, mpn=mpn).first()
    if component is None:
        raise NotFound(
            f"No item with MPN {mpn!r} was fetched in this session.",
            code=ErrorCode.ITEM_NOT_FOUND,
            fields={"mpn": ["Not a fetched item of this session."]},
        )
    return component


def component_price(component: SessionComponent) -> Decimal | None:
    """The item's price from its data, read the way the resolver reads "cheapest"."""
    return attribute_value(component.full_data or {}, "price")


def resolver_items(*, session: ChatSession) -> list[Item]:
    return [
        Item(
            mpn=c.mpn,
            name=c.name,
            component_type=c.component_type,
            summary=c.summary,
            data=c.full_data or {},
        )
        for c in component_list(session=session)
    ]


@dataclass(frozen=True)
class CartLine:
    """A cart line with the item it holds, so readers need no second lookup."""

    mpn: str
    position: int
    quantity: int
    note: str
    selected_at: datetime
    name: str
    component_type: str
    summary: str
    price: Decimal | None

    @property
    def line_total(self) -> Decimal | None:
        return None if self.price is None else self.price * self.quantity


def selection_lines(*, session: ChatSession) -> list[CartLine]:
    """The cart in order, joined to its items in two queries (no N+1)."""
    selections = list(SessionSelection.objects.filter(session=session).order_by("position"))
    components = {
        c.mpn: c
        for c in SessionComponent.objects.filter(
            session=session, mpn__in=[s.mpn for s in selections]
        )
    }
    lines = []
    for selection in selections:
        component = components.get(selection.mpn)
        lines.append(
            CartLine(
                mpn=selection.mpn,
                position=selection.position,
                quantity=selection.quantity,
                note=selection.note,
                selected_at=selection.selected_at,
                name=component.name if component else "",
                component_type=component.component_type if component else "",
                summary=component.summary if component else "",
                price=component_price(component) if component else None,
            )
        )
    return lines


def selection_line(*, session: ChatSession, mpn: str) -> CartLine:
    for line in selection_lines(session=session):
        if line.mpn == mpn:
            return line
    raise NotFound(
        f"{mpn!r} is not in the cart.",
        code=ErrorCode.NOT_IN_CART,
        fields={"mpn": ["Not in the cart."]},
    )


def cart_total(lines: list[CartLine]) -> Decimal | None:
    """Sum of priced lines; None if no line has a price."""
    totals = [line.line_total for line in lines if line.line_total is not None]
    return sum(totals, Decimal(0)) if totals else None


def components_by_mpn(*, session: ChatSession, mpns: list[str]) -> dict[str, SessionComponent]:
    """The session's fetched items among `mpns`, by MPN (unknown MPNs are absent)."""
    return {c.mpn: c for c in SessionComponent.objects.filter(session=session, mpn__in=mpns)}


def selection_list(*, session: ChatSession) -> list[SessionSelection]:
    """The cart's rows in cart order, without the items' details (see `selection_lines`)."""
    return list(SessionSelection.objects.filter(session=session).order_by("position"))
