"""Usage from the OpenAI and Anthropic SDKs' response objects, and the wrappers that record
every call made through a client. The provider's usage object is sent as it is (its own
record, kept by Engram as `usage_raw`); Engram normalises it (cached tokens inside input,
reasoning inside output), so the client does no token arithmetic of its own."""

from __future__ import annotations

import dataclasses
import inspect
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from engram._tracking import StepSink

Step = dict[str, Any]
log = logging.getLogger("engram")


# The usage fields of OpenAI (Chat Completions, Responses) and Anthropic, read by name
# from an object that is neither a mapping, a pydantic model, a dataclass nor has a
# `__dict__` (e.g. one with `__slots__` or properties).
USAGE_FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "prompt_tokens_details",
    "completion_tokens_details",
    "input_tokens",
    "output_tokens",
    "input_tokens_details",
    "output_tokens_details",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "cached_tokens",
    "reasoning_tokens",
)
_SCALARS = (bool, int, float, str)
_MAX_DEPTH = 4  # usage objects nest two levels (usage.prompt_tokens_details.cached_tokens)


def _as_dict(value: Any, depth: int = 0) -> dict[str, Any] | None:
    """`value` as a JSON object: a mapping, a pydantic model (`model_dump`), a dataclass,
    an object's public attributes (a SimpleNamespace, another client's class) or, failing
    those, its `USAGE_FIELDS`; None if none of them gives anything."""
    if value is None or isinstance(value, _SCALARS) or depth > _MAX_DEPTH:
        return None
    if isinstance(value, Mapping):
        items = dict(value)
    else:
        dump = getattr(value, "model_dump", None)
        if callable(dump):
            return dump(mode="json", exclude_none=True)  # type: ignore[no-any-return]  # an untyped third-party value
        items = _attributes(value)
    plain = {str(k): _plain(v, depth) for k, v in items.items() if not str(k).startswith("_")}
    return {k: v for k, v in plain.items() if v is not None} or None


def _attributes(value: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
    found = dict(getattr(value, "__dict__", None) or {})
    for name in USAGE_FIELDS:
        if name not in found:
            found[name] = getattr(value, name, None)
    return found


def _plain(value: Any, depth: int) -> Any:
    if value is None or isinstance(value, _SCALARS):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v, depth + 1) for v in value]
    return _as_dict(value, depth + 1)


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def step_from_response(
    response: Any,
    *,
    step_type: str = "llm",
    model: str | None = None,
    duration_ms: int = 0,
) -> Step:
    """A step from an OpenAI Chat Completion, an OpenAI Responses `Response` or an
    Anthropic `Message` (pydantic objects, dicts, dataclasses or any object with the
    same attributes): model, usage and duration. A response without a readable usage
    is recorded with 0 tokens, and logged as a warning on the `engram` logger."""
    usage = _as_dict(_get(response, "usage"))
    if not usage and response is not None:
        log.warning(
            "engram: no readable usage on the %s response (usage: %r); its step records 0 tokens",
            type(response).__name__,
            _get(response, "usage"),
        )
    return _step(step_type, str(model or _get(response, "model") or ""), usage, duration_ms)


def _step(step_type: str, model: str, usage: dict[str, Any] | None, duration_ms: int) -> Step:
    step: Step = {"step_type": step_type, "model": model, "duration_ms": max(0, int(duration_ms))}
    if usage:
        step["usage"] = usage
    else:
        step["input_tokens"] = 0
        step["output_tokens"] = 0
    return step


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


def _user_text(kwargs: dict[str, Any]) -> str:
    """The last user message, when it is plain text: the turn's `user_message`."""
    if isinstance(kwargs.get("input"), str):
        return str(kwargs["input"])
    for message in reversed(list(kwargs.get("messages") or [])):
        if _get(message, "role") == "user" and isinstance(_get(message, "content"), str):
            return str(_get(message, "content"))
    return ""


def _answer_text(response: Any) -> str:
    text = _get(response, "output_text")  # Responses API
    if isinstance(text, str):
        return text
    choices = _get(response, "choices")  # Chat Completions
    if choices:
        content = _get(_get(choices[0], "message"), "content")
        return content if isinstance(content, str) else ""
    parts = _get(response, "content")  # Anthropic Messages
    if isinstance(parts, list):
        return "".join(_get(p, "text") or "" for p in parts if _get(p, "type") == "text")
    return ""


class _StreamUsage:
    """Accumulates model, usage and text from a stream's events, per protocol."""

    def __init__(self, kind: str, model: str) -> None:
        self.kind = kind
        self.model = model
        self.usage: dict[str, Any] = {}
        self.text: list[str] = []

    def feed(self, event: Any) -> None:
        if self.kind == "openai_chat":
            self.model = _get(event, "model") or self.model
            usage = _as_dict(_get(event, "usage"))
            if usage:
                self.usage = usage  # the final chunk (stream_options.include_usage)
            for choice in _get(event, "choices") or []:
                delta = _get(choice, "delta")
                content = _get(delta, "content") if delta is not None else None
                if isinstance(content, str):
                    self.text.append(content)
        elif self.kind == "openai_responses":
            kind = _get(event, "type")
            if kind == "response.output_text.delta":
                self.text.append(_get(event, "delta") or "")
            elif kind in ("response.completed", "response.incomplete", "response.failed"):
                response = _get(event, "response")
                self.model = _get(response, "model") or self.model
                self.usage = _as_dict(_get(response, "usage")) or self.usage
        else:  # anthropic
            kind = _get(event, "type")
            if kind == "message_start":
                message = _get(event, "message")
                self.model = _get(message, "model") or self.model
                self.usage.update(_as_dict(_get(message, "usage")) or {})
            elif kind == "message_delta":
                # Cumulative counts: the delta's non-null fields replace the start's.
                self.usage.update(_as_dict(_get(event, "usage")) or {})
            elif kind == "content_block_delta":
                delta = _get(event, "delta")
                if _get(delta, "type") == "text_delta":
                    self.text.append(_get(delta, "text") or "")

    def step(self, step_type: str, duration_ms: int) -> Step:
        if not self.usage:
            log.warning(
                "engram: the %s stream of %r ended without usage; its step records 0 tokens",
                self.kind,
                self.model,
            )
        return _step(step_type, self.model, self.usage, duration_ms)


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
