"""HTTP with retries. Retried: connection errors, 429 that is not a budget, 503, and 409
`idempotency_in_flight` (the first attempt of the same key is still being stored).
Nothing else: a 4xx will answer the same again, and a 500 is a bug to surface.

A request whose answer may have been lost after the server acted (a read error, a
dropped connection) is retried only when it is safe to repeat: GET/PUT/DELETE, or a POST
that carries an Idempotency-Key (every turn POST does), so a retried turn is stored once."""

from __future__ import annotations

import asyncio
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from engram._errors import APIConnectionError, APIError, BudgetExceeded, error_from_response

DEFAULT_URL = "http://127.0.0.1:8000"
USER_AGENT = "engram-client/0.1.0"
SAFE_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter: attempt n waits up to base * 2**n, capped;
    a server's Retry-After, when given, is the floor (also capped)."""

    max_retries: int = 3
    base_delay: float = 0.25
    max_delay: float = 8.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        ceiling = min(self.max_delay, self.base_delay * (2**attempt))
        wait = random.uniform(0, ceiling)
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_delay))
        return wait


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    params: dict[str, Any] | None = None
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    retry_safe: bool = False  # repeating it cannot act twice (e.g. resume by identity)

    @property
    def repeatable(self) -> bool:
        return self.retry_safe or self.method in SAFE_METHODS or "Idempotency-Key" in self.headers


def resolve_config(base_url: str | None, api_key: str | None) -> tuple[str, str]:
    url = base_url or os.environ.get("ENGRAM_URL") or DEFAULT_URL
    key = api_key or os.environ.get("ENGRAM_API_KEY") or ""
    if not key:
        raise ValueError("No API key: pass api_key= or set ENGRAM_API_KEY.")
    url = url.rstrip("/")
    if not url.endswith("/api/v1"):
        url += "/api/v1"
    return url, key


def _clean_params(params: dict[str, Any] | None) -> dict[str, Any] | None:
    if params is None:
        return None
    return {k: v for k, v in params.items() if v is not None}


def _decode(response: httpx.Response) -> Any:
    if response.status_code == 204 or not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return {"raw": response.text}


def _retryable_answer(error: APIError) -> bool:
    if isinstance(error, BudgetExceeded):
        return False  # a spent budget does not refill by waiting
    if error.status in (429, 503):
        return True
    return error.status == 409 and error.code == "idempotency_in_flight"


def _retryable_exception(exc: httpx.TransportError, request: Request) -> bool:
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        return True  # the request never reached the server
    return request.repeatable


def _retry_after(error: APIError) -> float | None:
    try:
        value = error.headers.get("retry-after")
        return float(value) if value is not None else None
    except ValueError:
        return None


@dataclass(frozen=True)
class _Wait:
    """Try again after this many seconds."""

    seconds: float


def _after_answer(response: httpx.Response, attempt: int, retry: RetryPolicy) -> Any:
    """The decoded body of a success; else the error raised, or a `_Wait` when the
    answer is worth another attempt."""
    if response.is_success:
        return _decode(response)
    error = error_from_response(response.status_code, _decode(response), dict(response.headers))
    if attempt >= retry.max_retries or not _retryable_answer(error):
        raise error
    return _Wait(retry.delay(attempt, _retry_after(error)))


def _after_failure(
    exc: httpx.TransportError, request: Request, attempt: int, retry: RetryPolicy
) -> _Wait:
    """A `_Wait` when the request may be sent again; else APIConnectionError."""
    if attempt >= retry.max_retries or not _retryable_exception(exc, request):
        raise APIConnectionError(str(exc) or type(exc).__name__) from exc
    return _Wait(retry.delay(attempt))


class _Transport:
    """What the sync and async transports share: configuration, how a `Request` becomes
    an HTTP request, and (above) what an answer or a failure means. They differ only in
    awaiting the send and the sleep."""

    def __init__(self, base_url: str, api_key: str, *, retry: RetryPolicy) -> None:
        self.retry = retry
        self.base_url = base_url
        self.headers = {"Authorization": f"Bearer {api_key}", "User-Agent": USER_AGENT}

    def _arguments(self, request: Request) -> dict[str, Any]:
        return {
            "method": request.method,
            "url": self.base_url + request.path,
            "params": _clean_params(request.params),
            "json": request.json,
            "headers": {**self.headers, **request.headers},
        }


class SyncTransport(_Transport):
    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float,
        retry: RetryPolicy,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(base_url, api_key, retry=retry)
        self.client = http_client or httpx.Client(timeout=timeout)

    def send(self, request: Request) -> Any:
        attempt = 0
        while True:
            try:
                response = self.client.request(**self._arguments(request))
            except httpx.TransportError as exc:
                outcome: Any = _after_failure(exc, request, attempt, self.retry)
            else:
                outcome = _after_answer(response, attempt, self.retry)
            if not isinstance(outcome, _Wait):
                return outcome
            time.sleep(outcome.seconds)
            attempt += 1

    def close(self) -> None:
        self.client.close()


class AsyncTransport(_Transport):
    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float,
        retry: RetryPolicy,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(base_url, api_key, retry=retry)
        self.client = http_client or httpx.AsyncClient(timeout=timeout)

    async def send(self, request: Request) -> Any:
        attempt = 0
        while True:
            try:
                response = await self.client.request(**self._arguments(request))
            except httpx.TransportError as exc:
                outcome: Any = _after_failure(exc, request, attempt, self.retry)
            else:
                outcome = _after_answer(response, attempt, self.retry)
            if not isinstance(outcome, _Wait):
                return outcome
            await asyncio.sleep(outcome.seconds)
            attempt += 1

    async def close(self) -> None:
        await self.client.aclose()
