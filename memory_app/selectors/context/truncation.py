"""A turn cut to fit a budget it is larger than alone: the rule `packing` applies to the
newest turn (see its docstring).

Each message of the turn keeps its beginning and its end, half of its room each, and
its middle gives way to ELISION (` … [cut N tokens] … `, N the tokens left out). The
room is what the budget leaves after the messages' framing and the reply priming,
shared evenly between the user's message and the reply; what one needs less of goes to
the other, so a short question stays whole next to a long answer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from memory_app.selectors.context.candidate import Candidate, candidate_messages
from memory_app.window.tokens import (
    TOKENS_PER_REPLY,
    count_tokens,
    head_and_tail,
    message_tokens,
    messages_tokens,
)

ELISION = " … [cut {} tokens] … "


@dataclass(frozen=True)
class Cut:
    candidate: Candidate  # the turn as it goes in
    tokens_cut: int  # the tokens of its text left out


def turn_cut(turn: Candidate, budget: int) -> Cut | None:
    """`turn` cut so that its messages alone take at most `budget` tokens, or None when
    not even its beginnings, ends and elision marks fit."""
    messages = candidate_messages(turn)
    room = budget - TOKENS_PER_REPLY - sum(message_tokens(m["role"], "") for m in messages)
    sizes = [count_tokens(m["content"]) for m in messages]
    texts: dict[str, str] = {}
    tokens_cut = 0
    for message, size, share in zip(messages, sizes, _shares(sizes, room), strict=True):
        text, between = message["content"], 0
        if size > share:
            found = _cut_text(text, share)
            if found is None:
                return None
            text, between = found
        texts[message["role"]] = text
        tokens_cut += between
    fitted = replace(
        turn, text=texts.get("user", turn.text), reply=texts.get("assistant", turn.reply)
    )
    if messages_tokens(candidate_messages(fitted)) > budget:
        return None
    return Cut(candidate=fitted, tokens_cut=tokens_cut)


def _shares(sizes: list[int], room: int) -> list[int]:
    """`room` shared among messages of `sizes` tokens: evenly, what a smaller one does
    not need going to the others."""
    shares = [0] * len(sizes)
    left, waiting = room, sorted(range(len(sizes)), key=lambda i: sizes[i])
    while waiting:
        index = waiting.pop(0)
        even = left // (len(waiting) + 1)
        shares[index] = min(sizes[index], even)
        left -= shares[index]
    return shares


def _cut_text(text: str, limit: int) -> tuple[str, int] | None:
    """`text` in at most `limit` tokens, its beginning and its end around ELISION, and
    the tokens cut between them; None when the mark leaves no room for either."""
    keep = limit - count_tokens(ELISION.format(count_tokens(text)))
    while keep >= 2:
        start, end, between = head_and_tail(text, keep - keep // 2, keep // 2)
        cut = f"{start.rstrip()}{ELISION.format(between)}{end.lstrip()}"
        if count_tokens(cut) <= limit:
            return cut, between
        keep -= 1  # tokens merge differently around the mark: try one fewer
    return None
