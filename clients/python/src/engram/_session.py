"""Session handles: the session-scoped calls with the id bound, and `turn()`."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any

from engram._errors import EngramError
from engram._tracking import Turn

if TYPE_CHECKING:
    from engram._client import AsyncEngram, Engram

log = logging.getLogger("engram")


class _Handle:
    """The session-scoped calls of the client, with the session id bound. Each returns
    what the client's method returns (a value for `Engram`, an awaitable for
    `AsyncEngram`)."""

    def __init__(self, client: Any, data: dict[str, Any]) -> None:
        self.client = client
        self.data = data
        self.id: str = str(data["id"])

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id}>"

    def get(self) -> Any:
        """The session now: totals, budget, focus."""
        return self.client.get_session(self.id)

    def update(self, **fields: Any) -> Any:
        return self.client.update_session(self.id, **fields)

    def delete(self) -> Any:
        return self.client.delete_session(self.id)

    def record_turn(self, **fields: Any) -> Any:
        """See `Engram.record_turn`: steps, messages, state; one Idempotency-Key."""
        return self.client.record_turn(self.id, **fields)

    def list_turns(self, **params: Any) -> Any:
        return self.client.list_turns(self.id, **params)

    def rollback_turn(self, turn_number: int) -> Any:
        return self.client.rollback_turn(self.id, turn_number)

    def budget_check(self, *, estimated_tokens: int, **fields: Any) -> Any:
        return self.client.budget_check(self.id, estimated_tokens=estimated_tokens, **fields)

    def store_results(self, **fields: Any) -> Any:
        """`query`, `items` (mpn, name, component_type, summary, data), `filters`."""
        return self.client.store_results(self.id, **fields)

    def components(self) -> Any:
        return self.client.components(self.id)

    def resolve(self, ref: str, *, set_focus: bool = False) -> Any:
        return self.client.resolve(self.id, ref, set_focus=set_focus)

    def set_focus(self, **fields: Any) -> Any:
        """By `mpn` or `ref`."""
        return self.client.set_focus(self.id, **fields)

    def selections(self) -> Any:
        return self.client.selections(self.id)

    def add_selection(self, **fields: Any) -> Any:
        """By `mpn` or `ref`, with optional `quantity` and `note`."""
        return self.client.add_selection(self.id, **fields)

    def remove_selection(self, mpn: str) -> Any:
        return self.client.remove_selection(self.id, mpn)

    def reorder_selections(self, mpns: list[str]) -> Any:
        return self.client.reorder_selections(self.id, mpns)

    def cart_link(self) -> Any:
        return self.client.cart_link(self.id)

    def context(self, *, query: str | None = None, **params: Any) -> Any:
        return self.client.context(self.id, query=query, **params)


def reserve_check_fields(reserve: int | Mapping[str, Any]) -> dict[str, Any]:
    """`budget_check` arguments for a turn block's `reserve`: a token estimate, or a
    mapping of `estimated_tokens` with `estimated_cost_usd`, `model`, `lease_seconds`."""
    fields = {"estimated_tokens": reserve} if isinstance(reserve, int) else dict(reserve)
    if "estimated_tokens" not in fields:
        raise ValueError("reserve needs estimated_tokens")
    return {**fields, "reserve": True}


def _turn_reserving(session_id: str, check: Any, user_message: str, fields: Any) -> Turn:
    """The block's turn, spending the reservation the check took (if one was needed)."""
    reservation = (check or {}).get("reservation")
    if reservation:
        fields = {**fields, "reservation_id": reservation["id"]}
    turn = Turn(session_id, user_message=user_message, **fields)
    turn.reservation = reservation
    return turn


class Session(_Handle):
    """A session of the sync client. Every session-scoped call of `Engram` is here with
    the id bound: `record_turn`, `store_results`, `resolve`, `add_selection`, `context`…"""

    client: Engram

    @contextmanager
    def turn(
        self,
        user_message: str = "",
        *,
        reserve: int | Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> Iterator[Turn]:
        """Collects steps and records the turn once, on exit. If the block raises, the
        turn is still recorded (the failing step marked failed, the error kept) and the
        exception goes on. With `reserve` (estimated tokens, or a mapping with
        `estimated_tokens`, `estimated_cost_usd`, `model`, `lease_seconds`), the budget
        is checked and reserved before the block runs (`BudgetExceeded` then, and the
        block does not run) and the recorded turn spends the reservation."""
        check = None
        if reserve is not None:
            check = self.client.budget_check(self.id, **reserve_check_fields(reserve))
        turn = _turn_reserving(self.id, check, user_message, fields)
        token = turn.open()
        try:
            yield turn
        except BaseException as exc:
            Turn.close(token)
            turn.fail(exc)
            try:
                turn.result = self.client._record_turn_body(
                    self.id, turn.body(), turn.idempotency_key
                )
            except EngramError:
                log.exception("engram: could not record the failed turn of session %s", self.id)
            raise
        Turn.close(token)
        turn.result = self.client._record_turn_body(self.id, turn.body(), turn.idempotency_key)


class AsyncSession(_Handle):
    """A session of `AsyncEngram`: the same calls, awaited; `async with session.turn()`."""

    client: AsyncEngram

    @asynccontextmanager
    async def turn(
        self,
        user_message: str = "",
        *,
        reserve: int | Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> AsyncIterator[Turn]:
        """As `Session.turn`, `reserve` included."""
        check = None
        if reserve is not None:
            check = await self.client.budget_check(self.id, **reserve_check_fields(reserve))
        turn = _turn_reserving(self.id, check, user_message, fields)
        token = turn.open()
        try:
            yield turn
        except BaseException as exc:
            Turn.close(token)
            turn.fail(exc)
            try:
                turn.result = await self.client._record_turn_body(
                    self.id, turn.body(), turn.idempotency_key
                )
            except EngramError:
                log.exception("engram: could not record the failed turn of session %s", self.id)
            raise
        Turn.close(token)
        turn.result = await self.client._record_turn_body(
            self.id, turn.body(), turn.idempotency_key
        )
