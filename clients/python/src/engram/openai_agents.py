"""An Engram session as the OpenAI Agents SDK's `Session` (`pip install engram-client[agents]`).

    session = EngramSession(user_id="maria", agent_id="shop", conversation_id="chat-42")
    result = await Runner.run(agent, "Find a laptop", session=session)

Every `add_items` call the runner makes is one Engram turn: the items in the turn's
metadata (so any process can read the conversation back), their text as the turn's user
message and answer (so Engram's context, search and cockpit see the conversation), and the
run's model calls since the previous write as steps with their usage (so the session's
totals count every token). `pop_item` and `clear_session` roll turns back: the history
shrinks, the totals stay, since that money was spent.

Engram's errors reach the caller as `EngramSessionError`, a `UserError` of the SDK.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlparse

from agents.exceptions import UserError
from agents.memory.session_settings import SessionSettings

from engram._client import AsyncEngram
from engram._errors import EngramError

ITEMS_KEY = "openai_agents_items"
_RECORDED_ATTR = "_engram_recorded_requests"


class EngramSessionError(UserError):
    """Engram refused or could not be reached; `cause` is the client's `EngramError`."""

    def __init__(self, message: str, cause: EngramError | None = None) -> None:
        super().__init__(message)
        self.cause = cause


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return ""


def _texts(items: list[dict[str, Any]], role: str) -> str:
    return "\n".join(
        _text(item.get("content")) for item in items if item.get("role") == role
    ).strip()


def _items_of_turn(turn: dict[str, Any]) -> list[dict[str, Any]]:
    """The items a turn holds: those this class wrote, else its text as two messages (a
    turn recorded by another client reads as the exchange it was)."""
    stored = (turn.get("metadata") or {}).get(ITEMS_KEY)
    if isinstance(stored, list):
        return [item for item in stored if isinstance(item, dict)]
    items = []
    if turn.get("user_message"):
        items.append({"role": "user", "content": turn["user_message"]})
    if turn.get("assistant_response"):
        items.append({"role": "assistant", "content": turn["assistant_response"]})
    return items


def _step(entry: Any, model: str) -> dict[str, Any]:
    """A step from one of the run's `RequestUsage` entries, in the Responses API's usage
    shape: Engram normalises it as it does the provider's own."""
    input_details = getattr(entry, "input_tokens_details", None)
    output_details = getattr(entry, "output_tokens_details", None)
    usage = {
        "input_tokens": int(entry.input_tokens or 0),
        "output_tokens": int(entry.output_tokens or 0),
        "input_tokens_details": {
            "cached_tokens": int(getattr(input_details, "cached_tokens", 0) or 0)
        },
        "output_tokens_details": {
            "reasoning_tokens": int(getattr(output_details, "reasoning_tokens", 0) or 0)
        },
    }
    return {"step_type": "llm", "model": model, "usage": usage}


class EngramSession:
    """The Agents SDK's `Session` protocol over an Engram session. Name the session by
    `engram_session_id`, or by identity (`user_id`, `agent_id`, `conversation_id`: the
    same identity in any process resumes the same session). `model` labels the steps so
    Engram can price them (the SDK's usage entries do not carry it)."""

    def __init__(
        self,
        engram_session_id: str | None = None,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
        model: str = "",
        client: AsyncEngram | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        session_settings: SessionSettings | None = None,
    ) -> None:
        by_identity = (user_id, agent_id, conversation_id)
        if engram_session_id is not None:
            if not isinstance(engram_session_id, str) or not engram_session_id:
                raise UserError("engram_session_id must be a non-empty string.")
        elif not all(isinstance(v, str) and v for v in by_identity):
            raise UserError(
                "Name the session: engram_session_id, or user_id, agent_id and "
                "conversation_id (non-empty strings)."
            )
        if not isinstance(model, str):
            raise UserError("model must be a string.")
        self._id = engram_session_id
        self._identity = by_identity
        self.session_id: str = engram_session_id or str(conversation_id)
        self.session_settings = session_settings
        self.model = model
        self.client = client or AsyncEngram(base_url, api_key)

    async def _call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return await method(*args, **kwargs)
        except EngramError as exc:
            raise EngramSessionError(f"Engram: {exc}", exc) from exc

    async def engram_session_id(self) -> str:
        """The Engram session's id; by identity, resumed (or created) on first use."""
        if self._id is None:
            user_id, agent_id, conversation_id = self._identity
            handle = await self._call(
                self.client.resume_session,
                user_id=user_id,
                agent_id=agent_id,
                external_session_id=conversation_id,
            )
            self._id = handle.id
        return str(self._id)

    async def _active_turns(self) -> list[dict[str, Any]]:
        """Every turn not rolled back, oldest first (all pages)."""
        session_id = await self.engram_session_id()
        turns: list[dict[str, Any]] = []
        params: dict[str, Any] = {"page_size": 500}
        while True:
            page = await self._call(self.client.list_turns, session_id, **params)
            turns.extend(t for t in page["results"] if not t.get("rolled_back"))
            cursor = parse_qs(urlparse(page.get("next") or "").query).get("cursor")
            if not cursor:
                return [t for t in turns if t.get("kind", "exchange") == "exchange"]
            params["cursor"] = cursor[0]

    async def get_items(self, limit: int | None = None, *, wrapper: Any = None) -> list[Any]:
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise UserError("limit must be a non-negative integer or None.")
        items = [item for turn in await self._active_turns() for item in _items_of_turn(turn)]
        if limit is None:
            return items
        return items[-limit:] if limit else []

    def _new_steps(self, wrapper: Any) -> list[dict[str, Any]]:
        """The run's model calls not yet recorded: its usage entries past the count this
        session wrote for the same run (kept on the run's context wrapper)."""
        usage = getattr(wrapper, "usage", None)
        entries = list(getattr(usage, "request_usage_entries", None) or [])
        done = int(getattr(wrapper, _RECORDED_ATTR, 0))
        if wrapper is not None:
            setattr(wrapper, _RECORDED_ATTR, len(entries))
        return [_step(entry, self.model) for entry in entries[done:]]

    async def add_items(self, items: list[Any], *, wrapper: Any = None) -> None:
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise UserError("items must be a list of input items (dicts).")
        if not items:
            return
        started = time.monotonic()
        steps = self._new_steps(wrapper)
        session_id = await self.engram_session_id()
        await self._call(
            self.client.record_turn,
            session_id,
            steps=steps,
            user_message=_texts(items, "user"),
            assistant_response=_texts(items, "assistant"),
            metadata={ITEMS_KEY: items},
            duration_ms=int((time.monotonic() - started) * 1000),
        )

    async def pop_item(self, *, wrapper: Any = None) -> Any | None:
        turns = [t for t in await self._active_turns() if _items_of_turn(t)]
        if not turns:
            return None
        last = turns[-1]
        items = _items_of_turn(last)
        session_id = await self.engram_session_id()
        await self._call(self.client.rollback_turn, session_id, last["turn_number"])
        if len(items) > 1:  # the rest of that turn's items stay, as a turn without steps
            rest = items[:-1]
            await self._call(
                self.client.record_turn,
                session_id,
                user_message=_texts(rest, "user"),
                assistant_response=_texts(rest, "assistant"),
                metadata={ITEMS_KEY: rest},
            )
        return items[-1]

    async def clear_session(self, *, wrapper: Any = None) -> None:
        turns = await self._active_turns()
        if turns:
            session_id = await self.engram_session_id()
            await self._call(self.client.rollback_turn, session_id, turns[0]["turn_number"])

    async def context(self, query: str = "", **params: Any) -> dict[str, Any]:
        """Engram's assembled context for the next call (`GET …/context`): memories,
        state, cart and the turns that fit `budget`."""
        session_id = await self.engram_session_id()
        result: dict[str, Any] = await self._call(
            self.client.context, session_id, query=query, **params
        )
        return result

    def instructions(self, base: str, **params: Any) -> Callable[[Any, Any], Any]:
        """Dynamic instructions for an `Agent`: `base`, then what Engram's context holds
        beside the conversation (memories, state, cart: its system messages), ranked
        against the run's latest user message."""

        async def build(run_context: Any, agent: Any) -> str:
            turn_input = list(getattr(run_context, "turn_input", None) or [])
            query = _texts([i for i in turn_input if isinstance(i, dict)][-1:], "user")
            context = await self.context(query[:2000], **params)
            extra = [
                m["content"]
                for m in context.get("messages", [])
                if m.get("role") == "system" and m.get("content")
            ]
            return "\n\n".join([base, *extra])

        return build
