"""Greedy packing of scored context candidates under a token budget (seed 004).

Packing is greedy by score, after one reservation: the newest verbatim turns of the
window (seed 004's `recent_msgs[-keep_last_turns:]`, which its `Window.assemble` always
puts first) are packed first, newest first and contiguous, within `reserve_tokens` (a
share of the budget). Without it a long session's many milestone lines, boosted by their
role, crowd the conversation itself out of the context; with it the agent always sees
what was just said, and the rest of the budget goes to whatever scores best.

The first line of a section pays for the section's message framing and header. The
rendered messages are then counted exactly with the tokenizer, and should rounding
between line and message counts overshoot, the lowest-scored lines are dropped until the
total is within budget: the budget is a hard guarantee, not an estimate. The output
order is fixed (sections, then turns oldest first), never by score, so the same inputs
always give the same messages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from memory_app.selectors.context.candidate import (
    SECTIONS,
    TURNS,
    Candidate,
    candidate_messages,
)
from memory_app.selectors.context.scoring import Score
from memory_app.window.tokens import TOKENS_PER_REPLY, count_tokens, message_tokens, messages_tokens

Excluded = tuple[Candidate, Score, int, str]  # candidate, score, cost, reason


def candidate_cost(candidate: Candidate) -> int:
    """Tokens the candidate adds once its section's message exists (estimate for
    packing; the rendered messages are counted exactly afterwards)."""
    if candidate.section == TURNS:
        return sum(message_tokens(m["role"], m["content"]) for m in candidate_messages(candidate))
    return count_tokens(candidate.text) + 1  # and the newline that joins it to its section


def section_cost(section: str) -> int:
    role, header = SECTIONS[section]
    return message_tokens(role, header)


def render(selected: list[Candidate]) -> list[dict[str, str]]:
    """The chat messages, in the fixed output order."""
    messages: list[dict[str, str]] = []
    for section, (role, header) in SECTIONS.items():
        lines = sorted((c for c in selected if c.section == section), key=lambda c: c.order)
        if lines:
            messages.append(
                {"role": role, "content": "\n".join([header, *(c.text for c in lines)])}
            )
    for turn in sorted((c for c in selected if c.section == TURNS), key=lambda c: c.order):
        messages.extend(candidate_messages(turn))
    return messages


@dataclass
class Packed:
    messages: list[dict[str, str]]
    total_tokens: int
    included: list[tuple[Candidate, Score, int]] = field(default_factory=list)
    excluded: list[Excluded] = field(default_factory=list)
    reserved: set[str] = field(default_factory=set)  # keys packed by the reservation


def pack(
    candidates: list[Candidate],
    scores: dict[str, Score],
    budget: int,
    *,
    reserved: list[str] | None = None,
    reserve_tokens: int = 0,
    count: Callable[[list[dict[str, str]]], int] = messages_tokens,
) -> Packed:
    """`reserved` keys first (in their order, while within `reserve_tokens`), then the
    rest greedy by score (ties: section order, then position); exact under `budget`."""
    costs = {c.key: candidate_cost(c) for c in candidates}
    by_key = {c.key: c for c in candidates}
    limit = min(budget, TOKENS_PER_REPLY + reserve_tokens)
    pinned = _reserve((by_key[key] for key in reserved or []), costs, limit)
    pinned_keys = {c.key for c in pinned}
    ranked = pinned + [c for c in _ranked(candidates, scores) if c.key not in pinned_keys]
    used = TOKENS_PER_REPLY + sum(costs[c.key] for c in pinned)
    greedy, excluded = _greedy(ranked[len(pinned) :], scores, costs, used, budget)
    selected = pinned + greedy
    messages, total = _trimmed(selected, excluded, scores, costs, budget, count)
    order = {c.key: i for i, c in enumerate(ranked)}
    excluded.sort(key=lambda row: order[row[0].key])
    return Packed(
        messages=messages,
        total_tokens=total,
        included=[(c, scores[c.key], costs[c.key]) for c in selected],
        excluded=excluded,
        reserved={c.key for c in selected if c.key in pinned_keys},
    )


def _ranked(candidates: list[Candidate], scores: dict[str, Score]) -> list[Candidate]:
    """Best score first; ties by section order, then position, then key."""
    section_rank = {name: i for i, name in enumerate([*SECTIONS, TURNS])}
    return sorted(
        candidates,
        key=lambda c: (-scores[c.key].total, section_rank[c.section], c.order, c.key),
    )


def _reserve(window: Iterable[Candidate], costs: dict[str, int], limit: int) -> list[Candidate]:
    """The window's turns, newest first, while their tokens (after the reply priming)
    stay within `limit`; the first that does not fit ends the reservation, so the window
    stays contiguous: no older turn without the newer ones."""
    pinned: list[Candidate] = []
    used = TOKENS_PER_REPLY
    for candidate in window:
        if used + costs[candidate.key] > limit:
            break
        pinned.append(candidate)
        used += costs[candidate.key]
    return pinned


def _greedy(
    ranked: list[Candidate],
    scores: dict[str, Score],
    costs: dict[str, int],
    used: int,
    budget: int,
) -> tuple[list[Candidate], list[Excluded]]:
    """Best first, each candidate that still fits with `used` tokens already taken
    (the first line of a section also pays for its header); the others excluded, as
    `larger_than_budget` when they would not fit alone."""
    opened: set[str] = set()
    selected: list[Candidate] = []
    excluded: list[Excluded] = []
    for candidate in ranked:
        header = 0 if candidate.section == TURNS else section_cost(candidate.section)
        cost = costs[candidate.key] + (0 if candidate.section in opened else header)
        if used + cost <= budget:
            selected.append(candidate)
            used += cost
            if candidate.section != TURNS:
                opened.add(candidate.section)
        else:
            alone = TOKENS_PER_REPLY + costs[candidate.key] + header
            reason = "larger_than_budget" if alone > budget else "over_budget"
            excluded.append((candidate, scores[candidate.key], costs[candidate.key], reason))
    return selected, excluded


def _trimmed(
    selected: list[Candidate],
    excluded: list[Excluded],
    scores: dict[str, Score],
    costs: dict[str, int],
    budget: int,
    count: Callable[[list[dict[str, str]]], int],
) -> tuple[list[dict[str, str]], int]:
    """The rendered messages and their exact tokens; while over `budget` (line tokens
    did not add up exactly), the last selected candidate (pinned first, then score
    order: the weakest) moves from `selected` to `excluded`, both changed in place."""
    messages = render(selected)
    total = count(messages)
    while total > budget and selected:
        worst = selected.pop()
        excluded.append((worst, scores[worst.key], costs[worst.key], "over_budget"))
        messages = render(selected)
        total = count(messages)
    return messages, total
