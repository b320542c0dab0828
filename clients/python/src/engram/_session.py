"""Session handles: the session-scoped calls with the id bound, and `turn()`."""

from __future__ import annotations

import inspect
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

    @property
    def state_etag(self) -> str | None:
        """The tag of the session's state as this handle last saw it: from the session
        it was made from, then from each `get()`, `update()`, `record_turn()`,
        `rollback_turn()` and turn block of this handle (not from other handles, other
        clients, or a background send). Pass it as `if_match`; `PreconditionFailed`
        means the state moved since, and its `state_etag` is the current tag."""
        value = self.data.get("state_etag")
        return None if value is None else str(value)

    def _seen(self, answer: Any) -> Any:
        """`answer` (a value, or for the async client an awaitable), after noting the
        session it carries (see `_note`)."""
        if inspect.isawaitable(answer):

            async def noted() -> Any:
                return self._note(await answer)

            return noted()
        return self._note(answer)

    def _note(self, data: Any) -> Any:
        """Note the state's tag an answer carries: a session's `state_etag`, or the
        `session.state_etag` of a turn's or a rollback's answer. A turn that rotated
        the session answers its successor (`previous_session_id` this handle's id): the
        handle follows it, taking its id and tag, since the archived session takes no
        more writes and the successor carries its state on."""
        inner = data.get("session") if isinstance(data, dict) else None
        session = inner if isinstance(inner, dict) else data
        if not isinstance(session, dict) or "state_etag" not in session:
            return data
        if str(session.get("id")) == self.id:
            self.data = {**self.data, "state_etag": session["state_etag"]}
        elif session.get("previous_session_id") is not None and (
            str(session["previous_session_id"]) == self.id
        ):
            self.data = {**self.data, **session}
            self.id = str(session["id"])
        return data

    def _record(self, turn: Turn) -> Any:
        """A turn block's turn, sent on its exit (its `if_match` as If-Match)."""
        return self._seen(
            self.client._record_turn_body(self.id, turn.body(), turn.idempotency_key, turn.if_match)
        )

    def get(self) -> Any:
        """The session now: totals, budget, focus, `state_etag`."""
        return self._seen(self.client.get_session(self.id))

    def update(self, *, if_match: str | None = None, **fields: Any) -> Any:
        """See `Engram.update_session`; `if_match` as `state_etag` gives it."""
        return self._seen(self.client.update_session(self.id, if_match=if_match, **fields))

    def delete(self) -> Any:
        return self.client.delete_session(self.id)

    def record_turn(self, **fields: Any) -> Any:
        """See `Engram.record_turn`: steps, messages, state, `if_match`; one
        Idempotency-Key."""
        return self._seen(self.client.record_turn(self.id, **fields))

    def list_turns(self, **params: Any) -> Any:
        return self.client.list_turns(self.id, **params)

    def rollback_turn(self, turn_number: int) -> Any:
        """See `Engram.rollback_turn`; the restored state's tag becomes `state_etag`."""
        return self._seen(self.client.rollback_turn(self.id, turn_number))

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
        if_match: str | None = None,
        **fields: Any,
    ) -> Iterator[Turn]:
        """Collects steps and records the turn once, on exit. If the block raises, the
        turn is still recorded (the failing step marked failed, the error kept) and the
        exception goes on. With `reserve` (estimated tokens, or a mapping with
        `estimated_tokens`, `estimated_cost_usd`, `model`, `lease_seconds`), the budget
        is checked and reserved before the block runs (`BudgetExceeded` then, and the
        block does not run) and the recorded turn spends the reservation. With
        `if_match` (or `turn.if_match` set in the block), the turn is recorded only if
        the state still has that tag: `PreconditionFailed` on exit, nothing recorded; a
        background client queues the turn with it, and keeps that refusal in
        `client.background.failed`."""
        check = None
        if reserve is not None:
            check = self.client.budget_check(self.id, **reserve_check_fields(reserve))
        turn = _turn_reserving(self.id, check, user_message, {**fields, "if_match": if_match})
        token = turn.open()
        try:
            yield turn
        except BaseException as exc:
            Turn.close(token)
            turn.fail(exc)
            try:
                turn.result = self._record(turn)
            except EngramError:
                log.exception("engram: could not record the failed turn of session %s", self.id)
            raise
        Turn.close(token)
        turn.result = self._record(turn)


class AsyncSession(_Handle):
    """A session of `AsyncEngram`: the same calls, awaited; `async with session.turn()`."""

    client: AsyncEngram

    @asynccontextmanager
    async def turn(
        self,
        user_message: str = "",
        *,
        reserve: int | Mapping[str, Any] | None = None,
        if_match: str | None = None,
        **fields: Any,
    ) -> AsyncIterator[Turn]:
        """As `Session.turn`, `reserve` and `if_match` included."""
        check = None
        if reserve is not None:
            check = await self.client.budget_check(self.id, **reserve_check_fields(reserve))
        turn = _turn_reserving(self.id, check, user_message, {**fields, "if_match": if_match})
        token = turn.open()
        try:
            yield turn
        except BaseException as exc:
            Turn.close(token)
            turn.fail(exc)
            try:
                turn.result = await self._record(turn)
            except EngramError:
                log.exception("engram: could not record the failed turn of session %s", self.id)
            raise
        Turn.close(token)
        turn.result = await self._record(turn)
