"""Token counts from a step: explicit counts or a provider's own `usage` object.

Engram's convention (OpenAI's, and OpenTelemetry's `gen_ai.usage.*`):

- ``input_tokens``  = every input token, cached and cache-written ones included;
- ``cached_tokens`` = input tokens read from the provider's prompt cache (⊆ input);
- ``cache_write_tokens`` = input tokens written to the cache (⊆ input);
- ``output_tokens`` = every output token, reasoning ones included;
- ``reasoning_tokens`` = hidden reasoning tokens (⊆ output).

So ``cached + cache_write <= input`` and ``reasoning <= output`` always hold, and a
cost formula bills ``input - cached - cache_write`` at the plain input price.

Provider shapes, and how they map (see `normalise_usage`):

OpenAI Chat Completions
    ``prompt_tokens`` → input (already includes cached);
    ``prompt_tokens_details.cached_tokens`` → cached;
    ``completion_tokens`` → output (already includes reasoning);
    ``completion_tokens_details.reasoning_tokens`` → reasoning.
OpenAI Responses API
    ``input_tokens`` → input (includes cached); ``input_tokens_details.cached_tokens`` →
    cached; ``output_tokens`` → output; ``output_tokens_details.reasoning_tokens`` →
    reasoning.
Anthropic Messages
    ``input_tokens`` counts only the tokens *after* the last cache breakpoint; cache reads
    and writes are reported beside it, not inside it. So
    input = ``input_tokens + cache_read_input_tokens + cache_creation_input_tokens``,
    cached = ``cache_read_input_tokens``, cache_write = ``cache_creation_input_tokens``,
    output = ``output_tokens`` (Anthropic bills thinking as output and does not split it).
    The object is recognised as Anthropic's by either cache key.
Google Gemini (``usageMetadata``)
    ``promptTokenCount`` → input (includes cached); ``cachedContentTokenCount`` → cached;
    output = ``candidatesTokenCount + thoughtsTokenCount`` (Gemini reports thoughts
    beside the candidates); ``thoughtsTokenCount`` → reasoning.

Explicit counts and a usage object on the same step: the usage object is the provider's
own record, so it is used; any explicit count sent beside it must equal what the object
says, otherwise the step is rejected (400 naming the field) rather than one silently
winning. Counts above `MAX_TOKENS` are absurd (no call moves 10^10 tokens) and rejected.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_TOKENS = 10_000_000_000
COUNT_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


class UsageError(ValueError):
    """A count is missing, malformed or inconsistent; `field` is its path in the step."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class TokenCounts:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def validate(self, prefix: str = "") -> TokenCounts:
        """The invariants of the convention above; `prefix` locates the counts' source."""
        for name in COUNT_FIELDS:
            value = getattr(self, name)
            if value < 0:
                raise UsageError(prefix + name, "Must be zero or more.")
            if value > MAX_TOKENS:
                raise UsageError(prefix + name, f"Must be at most {MAX_TOKENS}.")
        if self.cached_tokens + self.cache_write_tokens > self.input_tokens:
            raise UsageError(
                prefix + "cached_tokens",
                "Cached plus cache-write tokens exceed input tokens, which include them.",
            )
        if self.reasoning_tokens > self.output_tokens:
            raise UsageError(
                prefix + "reasoning_tokens",
                "Reasoning tokens exceed output tokens, which include them.",
            )
        return self


def _count(usage: Mapping[str, Any], *path: str) -> int:
    """An integer at `path`; absent or null is 0; anything else but an int is an error."""
    value: Any = usage
    for depth, part in enumerate(path):
        if not isinstance(value, Mapping):
            # e.g. "prompt_tokens_details": "x": refused, not silently read as 0.
            raise UsageError("usage." + ".".join(path[:depth]), "Must be an object.")
        value = value.get(part)
        if value is None:
            return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError("usage." + ".".join(path), "Must be an integer.")
    if value < 0:
        raise UsageError("usage." + ".".join(path), "Must be zero or more.")
    if value > MAX_TOKENS:
        raise UsageError("usage." + ".".join(path), f"Must be at most {MAX_TOKENS}.")
    return value


def usage_shape(usage: Mapping[str, Any]) -> str:
    """Which provider's shape `usage` has: openai_chat, anthropic, gemini, openai_responses."""
    if "prompt_tokens" in usage or "completion_tokens" in usage:
        return "openai_chat"
    if "cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage:
        return "anthropic"
    if "promptTokenCount" in usage or "candidatesTokenCount" in usage:
        return "gemini"
    if "input_tokens" in usage or "output_tokens" in usage:
        # Without cache keys, Anthropic's and the Responses API's shapes mean the same.
        return "openai_responses"
    raise UsageError("usage", "Unrecognised usage object: expected OpenAI, Anthropic or Gemini.")


def normalise_usage(usage: Mapping[str, Any]) -> TokenCounts:
    """A provider's usage object as Engram's counts (module docstring: the mapping)."""
    if not isinstance(usage, Mapping):
        raise UsageError("usage", "Must be an object.")
    shape = usage_shape(usage)
    if shape == "openai_chat":
        counts = TokenCounts(
            input_tokens=_count(usage, "prompt_tokens"),
            output_tokens=_count(usage, "completion_tokens"),
            cached_tokens=_count(usage, "prompt_tokens_details", "cached_tokens"),
            reasoning_tokens=_count(usage, "completion_tokens_details", "reasoning_tokens"),
        )
    elif shape == "anthropic":
        cache_read = _count(usage, "cache_read_input_tokens")
        cache_write = _count(usage, "cache_creation_input_tokens")
        counts = TokenCounts(
            input_tokens=_count(usage, "input_tokens") + cache_read + cache_write,
            output_tokens=_count(usage, "output_tokens"),
            cached_tokens=cache_read,
            cache_write_tokens=cache_write,
        )
    elif shape == "gemini":
        thoughts = _count(usage, "thoughtsTokenCount")
        counts = TokenCounts(
            input_tokens=_count(usage, "promptTokenCount"),
            output_tokens=_count(usage, "candidatesTokenCount") + thoughts,
            cached_tokens=_count(usage, "cachedContentTokenCount"),
            reasoning_tokens=thoughts,
        )
    else:
        counts = TokenCounts(
            input_tokens=_count(usage, "input_tokens"),
            output_tokens=_count(usage, "output_tokens"),
            cached_tokens=_count(usage, "input_tokens_details", "cached_tokens"),
            reasoning_tokens=_count(usage, "output_tokens_details", "reasoning_tokens"),
        )
    return counts.validate(prefix="usage.")


def step_token_counts(
    *, explicit: Mapping[str, int | None], usage: Mapping[str, Any] | None
) -> TokenCounts:
    """The step's counts: from `usage` when given (explicit counts beside it must agree),
    else from the explicit counts, where input and output are required."""
    if usage is not None:
        counts = normalise_usage(usage)
        for name in COUNT_FIELDS:
            given = explicit.get(name)
            if given is not None and given != getattr(counts, name):
                raise UsageError(
                    name,
                    f"Disagrees with the usage object, which gives {getattr(counts, name)}; "
                    "send one or the other, or matching values.",
                )
        return counts
    for name in ("input_tokens", "output_tokens"):
        if explicit.get(name) is None:
            raise UsageError(name, "This field is required unless a usage object is given.")
    return TokenCounts(**{name: int(explicit.get(name) or 0) for name in COUNT_FIELDS}).validate()
