"""The API surface, written once. Every method builds a `Request` and hands it to
`_call`, which the sync client runs at once and the async client returns as a coroutine:
so `Engram` and `AsyncEngram` (and their session handles) cannot drift apart."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from engram._http import Request

if TYPE_CHECKING:
    from engram._session import AsyncSession, Session

_OMIT: Any = object()


def _body(**fields: Any) -> dict[str, Any]:
    """The fields that were given: an omitted argument is not sent (the server's default
    applies), while an explicit None is sent as null."""
    return {k: v for k, v in fields.items() if v is not _OMIT}


def _seg(value: str) -> str:
    return quote(str(value), safe="")


def new_idempotency_key() -> str:
    return f"engram-py-{uuid.uuid4()}"


def if_match_headers(if_match: str | None) -> dict[str, str]:
    """The If-Match header for a `state_etag` (sent as given, quotes included, or `*`)."""
    return {} if if_match is None else {"If-Match": if_match}


def turn_body(
    *,
    steps: Iterable[Mapping[str, Any]] = (),
    user_message: str = _OMIT,
    assistant_response: str = _OMIT,
    intent_data: dict[str, Any] = _OMIT,
    reasoning: str = _OMIT,
    metadata: dict[str, Any] = _OMIT,
    state: dict[str, Any] = _OMIT,
    duration_ms: int = _OMIT,
    occurred_at: datetime | str = _OMIT,
    reservation_id: str = _OMIT,
) -> dict[str, Any]:
    """A turn's JSON body. `occurred_at` (when the exchange happened; default now on the
    server) may be an aware datetime or an ISO 8601 string; `reservation_id`, the budget
    reservation the turn spends (from `budget_check(reserve=True)`)."""
    if isinstance(occurred_at, datetime):
        occurred_at = occurred_at.isoformat()
    return _body(
        user_message=user_message,
        assistant_response=assistant_response,
        intent_data=intent_data,
        reasoning=reasoning,
        metadata=metadata,
        state=state,
        duration_ms=duration_ms,
        occurred_at=occurred_at,
        reservation_id=reservation_id,
        steps=[dict(step) for step in steps],
    )


class Api:
    """Methods shared by `Engram` and `AsyncEngram`; they return what `_call` returns."""

    def _call(self, request: Request, then: Callable[[Any], Any] | None = None) -> Any:
        raise NotImplementedError

    def _handle(self, data: dict[str, Any]) -> Session | AsyncSession:
        raise NotImplementedError

    # Sessions -------------------------------------------------------------------------

    def create_session(
        self,
        *,
        user_id: str,
        agent_id: str,
        external_session_id: str | None = _OMIT,
        state: dict[str, Any] = _OMIT,
        metadata: dict[str, Any] = _OMIT,
        ttl_seconds: int = _OMIT,
        budget_tokens: int | None = _OMIT,
        budget_usd: str | None = _OMIT,
    ) -> Any:
        """A new session, as a handle (`Session` / `AsyncSession`)."""
        body = _body(
            user_id=user_id,
            agent_id=agent_id,
            external_session_id=external_session_id,
            state=state,
            metadata=metadata,
            ttl_seconds=ttl_seconds,
            budget_tokens=budget_tokens,
            budget_usd=budget_usd,
        )
        if body.get("budget_usd") is not None:
            body["budget_usd"] = str(body["budget_usd"])
        return self._call(Request("POST", "/sessions", json=body), then=self._handle)

    def resume_session(
        self,
        *,
        user_id: str,
        agent_id: str,
        external_session_id: str,
        state: dict[str, Any] = _OMIT,
        metadata: dict[str, Any] = _OMIT,
        ttl_seconds: int = _OMIT,
        budget_tokens: int | None = _OMIT,
        budget_usd: str | None = _OMIT,
    ) -> Any:
        """The unexpired session for (user_id, agent_id, external_session_id), or a new one. Safe
        to retry: it is keyed by identity, so a repeat finds the same session."""
        body = _body(
            user_id=user_id,
            agent_id=agent_id,
            external_session_id=external_session_id,
            state=state,
            metadata=metadata,
            ttl_seconds=ttl_seconds,
            budget_tokens=budget_tokens,
            budget_usd=budget_usd,
            resume=True,
        )
        if body.get("budget_usd") is not None:
            body["budget_usd"] = str(body["budget_usd"])
        request = Request("POST", "/sessions", json=body, retry_safe=True)
        return self._call(request, then=self._handle)

    def get_session(self, session_id: str) -> Any:
        return self._call(Request("GET", f"/sessions/{_seg(session_id)}"))

    def list_sessions(self, **filters: Any) -> Any:
        """One page: `user_id`, `agent_id`, `status`, `runaway`, `external_session_id`,
        `cursor`."""
        return self._call(Request("GET", "/sessions", params=filters))

    def update_session(self, session_id: str, *, if_match: str | None = None, **fields: Any) -> Any:
        """Change `state`, `metadata`, `ttl_seconds`, …; answers the session, with the
        new `state_etag`. With `if_match` (a `state_etag` you read, or `*`), only if the
        state still has that tag, else `PreconditionFailed` and nothing changes."""
        path = f"/sessions/{_seg(session_id)}"
        headers = if_match_headers(if_match)
        return self._call(Request("PATCH", path, json=fields, headers=headers))

    def delete_session(self, session_id: str) -> Any:
        return self._call(Request("DELETE", f"/sessions/{_seg(session_id)}"))

    # Turns ----------------------------------------------------------------------------

    def record_turn(
        self,
        session_id: str,
        *,
        steps: Iterable[Mapping[str, Any]] = (),
        idempotency_key: str | None = None,
        if_match: str | None = None,
        **fields: Any,
    ) -> Any:
        """Record a turn with its steps. The Idempotency-Key is made once here, so every
        retry of this call sends the same one and the turn is counted once. With
        `if_match` (a `state_etag` you read, or `*`), the turn is recorded only if the
        session's state still has that tag, whether or not the turn carries `state`;
        else `PreconditionFailed` and nothing of the turn is recorded (a background
        client queues the turn with its tag and keeps that refusal in
        `background.failed`). The answer's `session.state_etag` is the tag after the
        turn."""
        key = idempotency_key or new_idempotency_key()
        body = turn_body(steps=steps, **fields)
        return self._send_turn(session_id, body, key, if_match)

    def _send_turn(
        self, session_id: str, body: dict[str, Any], key: str, if_match: str | None = None
    ) -> Any:
        request = Request(
            "POST",
            f"/sessions/{_seg(session_id)}/turns",
            json=body,
            headers={"Idempotency-Key": key, **if_match_headers(if_match)},
        )
        return self._call(request)

    def import_conversations(self, conversations: Iterable[Mapping[str, Any]]) -> Any:
        """Past conversations (OpenAI chat messages with timestamps) as archived sessions
        of their users; idempotent per `conversation_id` and user."""
        body = {"conversations": [dict(c) for c in conversations]}
        return self._call(Request("POST", "/conversations/import", json=body))

    def list_turns(self, session_id: str, **params: Any) -> Any:
        return self._call(Request("GET", f"/sessions/{_seg(session_id)}/turns", params=params))

    def rollback_turn(self, session_id: str, turn_number: int) -> Any:
        path = f"/sessions/{_seg(session_id)}/turns/{int(turn_number)}/rollback"
        return self._call(Request("POST", path))

    def budget_check(self, session_id: str, *, estimated_tokens: int, **fields: Any) -> Any:
        """200 with what remains, or `BudgetExceeded` (with `retry_after`)."""
        body = {"estimated_tokens": estimated_tokens, **fields}
        path = f"/sessions/{_seg(session_id)}/budget/check"
        return self._call(Request("POST", path, json=body))

    # Workspace: results, references, focus, cart, context --------------------------

    def store_results(
        self,
        session_id: str,
        *,
        query: str,
        items: Iterable[Mapping[str, Any]],
        filters: dict[str, Any] = _OMIT,
    ) -> Any:
        body = _body(query=query, items=[dict(item) for item in items], filters=filters)
        return self._call(Request("POST", f"/sessions/{_seg(session_id)}/results", json=body))

    def components(self, session_id: str) -> Any:
        return self._call(Request("GET", f"/sessions/{_seg(session_id)}/components"))

    def resolve(self, session_id: str, ref: str, *, set_focus: bool = False) -> Any:
        """The item "the first one" / "the cheapest" refers to, or `Unresolved`."""
        params = {"ref": ref, "set_focus": "true" if set_focus else None}
        return self._call(Request("GET", f"/sessions/{_seg(session_id)}/resolve", params=params))

    def set_focus(self, session_id: str, *, mpn: str = _OMIT, ref: str = _OMIT) -> Any:
        body = _body(mpn=mpn, ref=ref)
        return self._call(Request("PUT", f"/sessions/{_seg(session_id)}/focus", json=body))

    def selections(self, session_id: str) -> Any:
        return self._call(Request("GET", f"/sessions/{_seg(session_id)}/selections"))

    def add_selection(
        self,
        session_id: str,
        *,
        mpn: str = _OMIT,
        ref: str = _OMIT,
        quantity: int = _OMIT,
        note: str = _OMIT,
    ) -> Any:
        """Add to the cart by `mpn` or by reference; adding twice is a no-op."""
        body = _body(mpn=mpn, ref=ref, quantity=quantity, note=note)
        path = f"/sessions/{_seg(session_id)}/selections"
        return self._call(Request("POST", path, json=body))

    def remove_selection(self, session_id: str, mpn: str) -> Any:
        path = f"/sessions/{_seg(session_id)}/selections/{quote(mpn, safe='/')}"
        return self._call(Request("DELETE", path))

    def reorder_selections(self, session_id: str, mpns: list[str]) -> Any:
        path = f"/sessions/{_seg(session_id)}/selections/reorder"
        return self._call(Request("POST", path, json={"mpns": list(mpns)}))

    def cart_link(self, session_id: str) -> Any:
        return self._call(Request("POST", f"/sessions/{_seg(session_id)}/cart-link"))

    def context(self, session_id: str, *, query: str | None = None, **params: Any) -> Any:
        """The assembled context for the next LLM call (`budget`, `acting_user_id`, …)."""
        path = f"/sessions/{_seg(session_id)}/context"
        return self._call(Request("GET", path, params={"query": query, **params}))

    # Long-term memory -------------------------------------------------------------------

    def add_memory(self, **fields: Any) -> Any:
        """`user_id`, `agent_id`, `type`, `scope`, `content`, … → `action` and the memory."""
        return self._call(Request("POST", "/memories", json=fields))

    def add_memories(self, items: Iterable[Mapping[str, Any]]) -> Any:
        return self._call(Request("POST", "/memories/bulk", json=[dict(i) for i in items]))

    def search_memories(self, query: str, **fields: Any) -> Any:
        return self._call(Request("POST", "/memories/search", json={"query": query, **fields}))

    def list_memories(self, **filters: Any) -> Any:
        return self._call(Request("GET", "/memories", params=filters))

    def get_memory(self, memory_id: str, **acting: Any) -> Any:
        return self._call(Request("GET", f"/memories/{_seg(memory_id)}", params=acting))

    def update_memory(
        self, memory_id: str, *, acting: dict[str, Any] | None = None, **fields: Any
    ) -> Any:
        path = f"/memories/{_seg(memory_id)}"
        return self._call(Request("PATCH", path, json=fields, params=acting))

    def delete_memory(self, memory_id: str, **acting: Any) -> Any:
        return self._call(Request("DELETE", f"/memories/{_seg(memory_id)}", params=acting))

    def memory_history(self, memory_id: str, **acting: Any) -> Any:
        path = f"/memories/{_seg(memory_id)}/history"
        return self._call(Request("GET", path, params=acting))

    # Users and spend --------------------------------------------------------------------

    def erase_user(self, user_id: str) -> Any:
        """Erase all the tenant holds about the user: sessions, turns, cart, memories.
        Answers row counts per kind: `deleted`, and `anonymised` (`steps`: the user's
        steps, kept as anonymous spend, not deleted)."""
        return self._call(Request("DELETE", f"/users/{_seg(user_id)}"))

    def usage(self, *, group_by: str = "day", **params: Any) -> Any:
        """Tokens and cost grouped by day/model/agent/user/step_type/session; pass
        `from_`/`to` as dates or ISO date-times."""
        if "from_" in params:
            params["from"] = params.pop("from_")
        return self._call(Request("GET", "/usage", params={"group_by": group_by, **params}))
