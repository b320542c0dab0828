"""Session handles: the session-scoped calls with the id bound, and `turn()`."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any

from engram._errors import EngramError
from engram._tracking import Turn

if TYPE_CHECKING:
    from engram._client import AsyncEngram, Engram

log = logging.getLogger("engram")

_SCOPED = (
    "record_turn",
    "list_turns",
    "rollback_turn",
    "budget_check",
    "store_results",
    "components",
    "resolve",
    "set_focus",
    "selections",
    "add_selection",
    "remove_selection",
    "reorder_selections",
    "cart_link",
    "context",
)


class _Handle:
    def __init__(self, client: Any, data: dict[str, Any]) -> None:
        self.client = client
        self.data = data
        self.id: str = str(data["id"])

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id}>"

    def __getattr__(self, name: str) -> Any:
        if name in _SCOPED:
            method = getattr(self.client, name)
            return lambda *args, **kwargs: method(self.id, *args, **kwargs)
        raise AttributeError(name)

    def get(self) -> Any:
        """The session now: totals, budget, focus."""
        return self.client.get_session(self.id)

    def update(self, **fields: Any) -> Any:
        return self.client.update_session(self.id, **fields)

    def delete(self) -> Any:
        return self.client.delete_session(self.id)


class Session(_Handle):
    """A session of the sync client. Every session-scoped call of `Engram` is here with
    the id bound: `record_turn`, `store_results`, `resolve`, `add_selection`, `context`…"""

    client: Engram

    @contextmanager
    def turn(self, user_message: str = "", **fields: Any) -> Iterator[Turn]:
        """Collects steps and records the turn once, on exit. If the block raises, the
        turn is still recorded (the failing step marked failed, the error kept) and the
        exception goes on."""
        turn = Turn(self.id, user_message=user_message, **fields)
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
    async def turn(self, user_message: str = "", **fields: Any) -> AsyncIterator[Turn]:
        turn = Turn(self.id, user_message=user_message, **fields)
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
