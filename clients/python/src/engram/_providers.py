"""The wrappers that record every call made through an OpenAI or Anthropic client, streamed
or not, as a step of an Engram session; what they read from a response is in
`engram._responses`."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterator
from typing import Any

from engram._responses import Step, _answer_text, _StreamUsage, _user_text
from engram._responses import step_from_response as step_from_response
from engram._tracking import StepSink


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def _failed_step(kind: str, kwargs: dict[str, Any], started: float, exc: BaseException) -> Step:
    return {
        "step_type": kind,
        "model": str(kwargs.get("model") or ""),
        "input_tokens": 0,
        "output_tokens": 0,
        "duration_ms": _ms_since(started),
        "success": False,
        "error": f"{type(exc).__name__}: {exc}"[:10_000],
    }


class _RecordingStream:
    """Wraps a provider stream (sync); records one step when it ends, however it ends."""

    def __init__(self, stream: Any, usage: _StreamUsage, finish: Callable[..., Any]) -> None:
        self._stream = stream
        self._usage = usage
        self._finish = finish
        self._done = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __iter__(self) -> Iterator[Any]:
        error: BaseException | None = None
        try:
            for event in self._stream:
                self._usage.feed(event)
                yield event
        except BaseException as exc:
            error = exc
            raise
        finally:
            self._end(error)

    def __enter__(self) -> _RecordingStream:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def close(self) -> None:
        try:
            self._stream.close()
        finally:
            self._end(None)

    def _end(self, error: BaseException | None) -> None:
        if not self._done:
            self._done = True
            self._finish(self._usage, error)


class _RecordingAsyncStream:
    """The same for an async stream."""

    def __init__(self, stream: Any, usage: _StreamUsage, finish: Callable[..., Any]) -> None:
        self._stream = stream
        self._usage = usage
        self._finish = finish
        self._done = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def __aiter__(self) -> Any:
        error: BaseException | None = None
        try:
            async for event in self._stream:
                self._usage.feed(event)
                yield event
        except BaseException as exc:
            error = exc
            raise
        finally:
            await self._end(error)

    async def __aenter__(self) -> _RecordingAsyncStream:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    async def close(self) -> None:
        try:
            await self._stream.close()
        finally:
            await self._end(None)

    async def _end(self, error: BaseException | None) -> None:
        if not self._done:
            self._done = True
            result = self._finish(self._usage, error)
            if inspect.isawaitable(result):
                await result


# The step type of every recorded provider call.
STEP_TYPE = "llm"


def _instrument(create: Callable[..., Any], kind: str, sink: StepSink) -> Callable[..., Any]:
    """`create` measured and recorded: one step per call, streamed or not."""

    def recording_create(*args: Any, **kwargs: Any) -> Any:
        # Sync or async is known only from what `create` returns: the async clients'
        # methods are wrapped by decorators that hide their coroutine nature.
        kwargs = _asking_stream_usage(kind, kwargs)
        started = time.monotonic()
        try:
            response = create(*args, **kwargs)
        except Exception as exc:
            sink.add(_failed_step(STEP_TYPE, kwargs, started, exc), "", "")
            raise
        if inspect.isawaitable(response):
            return _record_async(response, kind, sink, kwargs, started)
        if kwargs.get("stream"):
            usage = _StreamUsage(kind, str(kwargs.get("model") or ""))
            return _RecordingStream(response, usage, _stream_finisher(sink, started, kwargs))
        step = step_from_response(response, step_type=STEP_TYPE, duration_ms=_ms_since(started))
        sink.add(step, _user_text(kwargs), _answer_text(response))
        return response

    return recording_create


def _asking_stream_usage(kind: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments, asking a streamed OpenAI chat completion for its usage."""
    if kind == "openai_chat" and kwargs.get("stream"):
        # Usage arrives only in a final chunk, and only when asked for.
        options = dict(kwargs.get("stream_options") or {})
        options.setdefault("include_usage", True)
        kwargs = {**kwargs, "stream_options": options}
    return kwargs


def _stream_finisher(sink: StepSink, started: float, kwargs: dict[str, Any]) -> Callable[..., Any]:
    """What records a stream's step once it ends: failed if it ended on an error other
    than being closed early (GeneratorExit)."""

    def finish(usage: _StreamUsage, error: BaseException | None) -> Any:
        step = usage.step(STEP_TYPE, _ms_since(started))
        if error is not None and not isinstance(error, GeneratorExit):
            step.update(success=False, error=f"{type(error).__name__}: {error}"[:10_000])
        return sink.add(step, _user_text(kwargs), "".join(usage.text))

    return finish


async def _record_async(
    pending: Any, kind: str, sink: StepSink, kwargs: dict[str, Any], started: float
) -> Any:
    """An async client's call awaited and recorded, as `_instrument` records a sync one."""
    try:
        response = await pending
    except Exception as exc:
        await _maybe_await(sink.add(_failed_step(STEP_TYPE, kwargs, started, exc), "", ""))
        raise
    if kwargs.get("stream"):
        usage = _StreamUsage(kind, str(kwargs.get("model") or ""))
        return _RecordingAsyncStream(response, usage, _stream_finisher(sink, started, kwargs))
    step = step_from_response(response, step_type=STEP_TYPE, duration_ms=_ms_since(started))
    await _maybe_await(sink.add(step, _user_text(kwargs), _answer_text(response)))
    return response


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


class _Wrapped:
    """A transparent proxy that swaps in recording versions of the hooked methods."""

    def __init__(
        self,
        target: Any,
        hooks: dict[tuple[str, ...], str],
        sink: StepSink,
        path: tuple[str, ...] = (),
    ) -> None:
        self._target = target
        self._hooks = hooks
        self._sink = sink
        self._path = path

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        path = (*self._path, name)
        if path in self._hooks:
            return _instrument(attr, self._hooks[path], self._sink)
        if any(hook[: len(path)] == path for hook in self._hooks):
            return _Wrapped(attr, self._hooks, self._sink, path)
        return attr


OPENAI_HOOKS: dict[tuple[str, ...], str] = {
    ("chat", "completions", "create"): "openai_chat",
    ("responses", "create"): "openai_responses",
}
ANTHROPIC_HOOKS: dict[tuple[str, ...], str] = {("messages", "create"): "anthropic"}


def wrap_openai(client: Any, session: Any) -> Any:
    """`client` (OpenAI or AsyncOpenAI) whose `chat.completions.create` and
    `responses.create` calls, streamed or not, are recorded in `session`: as steps of
    the session's open `turn()` if there is one, else each as a turn of its own."""
    return _Wrapped(client, OPENAI_HOOKS, StepSink(session))


def wrap_anthropic(client: Any, session: Any) -> Any:
    """`client` (Anthropic or AsyncAnthropic) whose `messages.create` calls, streamed or
    not, are recorded in `session` the same way."""
    return _Wrapped(client, ANTHROPIC_HOOKS, StepSink(session))
