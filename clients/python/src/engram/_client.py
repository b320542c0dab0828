"""`Engram` (sync) and `AsyncEngram`: configuration, transport, and the session handles."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from engram._api import Api, turn_body
from engram._background import BackgroundSender, QueuedTurn
from engram._http import AsyncTransport, Request, RetryPolicy, SyncTransport, resolve_config
from engram._session import AsyncSession, Session


class Engram(Api):
    """The sync client. `base_url` and `api_key` default to `ENGRAM_URL` and
    `ENGRAM_API_KEY`. With `background=True`, turns are queued and sent in batches by a
    thread; `record_turn` then returns None, `flush()` waits for the queue, and a turn
    the server refused (a stale `if_match`'s `PreconditionFailed` too) is in
    `background.failed`."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff_base: float = 0.25,
        backoff_max: float = 8.0,
        background: bool = False,
        max_queue: int = 10_000,
        batch_size: int = 100,
        flush_interval: float = 1.0,
        http_client: httpx.Client | None = None,
    ) -> None:
        url, key = resolve_config(base_url, api_key)
        retry = RetryPolicy(max_retries=max_retries, base_delay=backoff_base, max_delay=backoff_max)
        self._transport = SyncTransport(
            url, key, timeout=timeout, retry=retry, http_client=http_client
        )
        self._background = (
            BackgroundSender(
                self._transport,
                max_queue=max_queue,
                batch_size=batch_size,
                flush_interval=flush_interval,
            )
            if background
            else None
        )

    @property
    def background(self) -> BackgroundSender | None:
        return self._background

    def _call(self, request: Request, then: Callable[[Any], Any] | None = None) -> Any:
        data = self._transport.send(request)
        return then(data) if then is not None else data

    def _handle(self, data: dict[str, Any]) -> Session:
        return Session(self, data)

    def session(self, session_id: str) -> Session:
        """A handle on an existing session, without a request."""
        return Session(self, {"id": session_id})

    def _send_turn(
        self, session_id: str, body: dict[str, Any], key: str, if_match: str | None = None
    ) -> Any:
        if self._background is not None:
            self._background.enqueue(QueuedTurn(session_id, body, key, if_match))
            return None
        return super()._send_turn(session_id, body, key, if_match)

    def _record_turn_body(
        self, session_id: str, body: dict[str, Any], key: str, if_match: str | None = None
    ) -> Any:
        return self._send_turn(session_id, turn_body(**body), key, if_match)

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every queued turn was sent (background mode; else nothing to do)."""
        if self._background is not None:
            self._background.flush(timeout)

    def close(self) -> None:
        if self._background is not None:
            self._background.shutdown()
        self._transport.close()

    def __enter__(self) -> Engram:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


class AsyncEngram(Api):
    """The async client: the same methods as `Engram`, each awaited. (Background mode is
    the sync client's: an event loop already lets callers send turns concurrently.)"""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff_base: float = 0.25,
        backoff_max: float = 8.0,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        url, key = resolve_config(base_url, api_key)
        retry = RetryPolicy(max_retries=max_retries, base_delay=backoff_base, max_delay=backoff_max)
        self._transport = AsyncTransport(
            url, key, timeout=timeout, retry=retry, http_client=http_client
        )

    async def _acall(self, request: Request, then: Callable[[Any], Any] | None) -> Any:
        data = await self._transport.send(request)
        return then(data) if then is not None else data

    def _call(self, request: Request, then: Callable[[Any], Any] | None = None) -> Any:
        return self._acall(request, then)

    def _handle(self, data: dict[str, Any]) -> AsyncSession:
        return AsyncSession(self, data)

    def session(self, session_id: str) -> AsyncSession:
        return AsyncSession(self, {"id": session_id})

    def _record_turn_body(
        self, session_id: str, body: dict[str, Any], key: str, if_match: str | None = None
    ) -> Any:
        return self._send_turn(session_id, turn_body(**body), key, if_match)

    async def flush(self, timeout: float | None = None) -> None:
        """Nothing is queued by the async client; kept for the same surface."""

    async def close(self) -> None:
        await self._transport.close()

    async def __aenter__(self) -> AsyncEngram:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()
