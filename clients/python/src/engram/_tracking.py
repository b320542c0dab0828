"""Step tracking: a `Turn` collects the steps of one agent turn and is recorded once, when
its `with` block ends, under one Idempotency-Key made when the turn opened."""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from engram._api import new_idempotency_key

_ACTIVE: contextvars.ContextVar[tuple[Turn, ...]] = contextvars.ContextVar(
    "engram_active_turns", default=()
)


def active_turn(session_id: str) -> Turn | None:
    """The innermost open turn of this session in the current thread or task."""
    for turn in reversed(_ACTIVE.get()):
        if turn.session_id == session_id:
            return turn
    return None


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:10_000]


class Turn:
    """One turn being built. Set `assistant_response`, `state`, `metadata`, … on it; add
    steps with `track(response)`, `add_step(...)` or `with turn.step(...)`."""

    def __init__(self, session_id: str, **fields: Any) -> None:
        self.session_id = session_id
        self.user_message: str = fields.pop("user_message", "")
        self.assistant_response: str = fields.pop("assistant_response", "")
        # The `state_etag` the turn is based on, sent as If-Match (see `record_turn`).
        self.if_match: str | None = fields.pop("if_match", None)
        self.fields: dict[str, Any] = fields  # intent_data, reasoning, metadata, state
        self.steps: list[dict[str, Any]] = []
        self.idempotency_key = new_idempotency_key()
        self.error: BaseException | None = None
        self.result: Any = None  # the server's answer once recorded (None in background)
        self.reservation: dict[str, Any] | None = None  # the budget it spends, if reserved
        self._started = time.monotonic()
        self._mark = self._started
        self._failed_steps: set[int] = set()

    def _since_mark(self) -> int:
        now = time.monotonic()
        elapsed = int((now - self._mark) * 1000)
        self._mark = now
        return elapsed

    def track(
        self,
        response: Any,
        *,
        step_type: str = "llm",
        model: str | None = None,
        duration_ms: int | None = None,
    ) -> dict[str, Any]:
        """A step from an OpenAI Chat Completion / Responses `Response` or an Anthropic
        `Message`: model and usage (cached and reasoning tokens included). Without
        `duration_ms`, the time since the turn opened or since the previous step."""
        from engram._responses import step_from_response

        elapsed = self._since_mark()
        step = step_from_response(
            response,
            step_type=step_type,
            model=model,
            duration_ms=elapsed if duration_ms is None else duration_ms,
        )
        self.steps.append(step)
        return step

    def add_step(
        self,
        step_type: str,
        *,
        model: str = "",
        input_tokens: int = 0,
        output_tokens: int = 0,
        duration_ms: int | None = None,
        success: bool = True,
        error: str | None = None,
        **counts: Any,
    ) -> dict[str, Any]:
        """A step from explicit counts (`cached_tokens`, `reasoning_tokens`, … too), or
        a tool call with no tokens."""
        elapsed = self._since_mark()
        step = {
            "step_type": step_type,
            "model": model,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "duration_ms": elapsed if duration_ms is None else duration_ms,
            "success": success,
            "error": error,
            **counts,
        }
        self.steps.append(step)
        return step

    @contextmanager
    def step(self, step_type: str, *, model: str = "") -> Iterator[StepTimer]:
        """Times a block as one step; `timer.track(response)` fills in the usage. If the
        block raises, the step is recorded as failed with the error, and the error goes on."""
        timer = StepTimer(self, step_type, model)
        self._since_mark()
        try:
            yield timer
        except BaseException as exc:
            step = timer.finish()
            step.update(success=False, error=_error_text(exc))
            self._failed_steps.add(id(exc))
            raise
        else:
            timer.finish()

    def fail(self, exc: BaseException) -> None:
        """The block raised: keep the error, as a failed step unless one already holds it."""
        self.error = exc
        if id(exc) not in self._failed_steps:
            self.add_step("error", success=False, error=_error_text(exc))

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "user_message": self.user_message,
            "assistant_response": self.assistant_response,
            "steps": list(self.steps),
            "duration_ms": int((time.monotonic() - self._started) * 1000),
        }
        body.update(self.fields)
        if self.error is not None:
            body["metadata"] = {**body.get("metadata", {}), "error": _error_text(self.error)}
        return body

    def open(self) -> contextvars.Token[tuple[Turn, ...]]:
        return _ACTIVE.set((*_ACTIVE.get(), self))

    @staticmethod
    def close(token: contextvars.Token[tuple[Turn, ...]]) -> None:
        _ACTIVE.reset(token)


class StepTimer:
    """The step of a `with turn.step(...)` block."""

    def __init__(self, turn: Turn, step_type: str, model: str) -> None:
        self.turn = turn
        self.step_type = step_type
        self.model = model
        self.response: Any = None
        self._started = time.monotonic()
        self._step: dict[str, Any] | None = None

    def track(self, response: Any) -> None:
        self.response = response

    def finish(self) -> dict[str, Any]:
        if self._step is None:
            from engram._responses import step_from_response

            self._step = step_from_response(
                self.response,
                step_type=self.step_type,
                model=self.model or None,
                duration_ms=int((time.monotonic() - self._started) * 1000),
            )
            self.turn.steps.append(self._step)
            self.turn._mark = time.monotonic()
        return self._step


class StepSink:
    """Where a wrapped client's calls go: the session's open turn, else a turn of their own."""

    def __init__(self, session: Any) -> None:
        self.session = session

    def add(self, step: dict[str, Any], user_message: str, answer: str) -> Any:
        turn = active_turn(self.session.id)
        if turn is not None:
            turn.steps.append(step)
            turn._mark = time.monotonic()
            return None
        return self.session.record_turn(
            steps=[step], user_message=user_message, assistant_response=answer
        )
