"""Scoring and greedy packing of context candidates under a token budget (seed 004).

score = 0.35·recency + 0.45·semantic + 0.10·role + 0.10·signal, where recency halves
every `half_life_minutes`, semantic is the cosine of query and candidate embeddings
(0 without a query), role is 1.0 for system and milestone candidates and 0.7 otherwise,
and signal is a candidate's own evidence of usefulness (in the cart, in focus, an
important memory…), clipped to [0, 1].

Packing is greedy by score, after one reservation: the newest verbatim turns of the
window (seed 004's `recent_msgs[-keep_last_turns:]`, which its `Window.assemble` always
puts first) are packed first, newest first and contiguous, within `reserve_tokens` (a
share of the budget). Without it a long session's many milestone lines, boosted by their
role, crowd the conversation itself out of the context; with it the agent always sees
what was just said, and the rest of the budget goes to whatever scores best.

Candidates are lines grouped into sections (one chat message per section: state,
summaries, milestones, memories, failures) or whole turns (a user and an assistant
message). The first line of a section pays for the section's message framing and header.
The rendered messages are then counted exactly with the tokenizer, and should rounding
between line and message counts overshoot, the lowest-scored lines are dropped until the
total is within budget: the budget is a hard guarantee, not an estimate. The output
order is fixed (sections, then turns oldest first), never by score, so the same inputs
always give the same messages.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from memory_app.window.tokens import TOKENS_PER_REPLY, count_tokens, message_tokens, messages_tokens

W_RECENCY = 0.35
W_SEMANTIC = 0.45
W_ROLE = 0.10
W_SIGNAL = 0.10
BOOSTED_ROLES = frozenset({"system", "milestone"})

# Section → (role, header), in output order. Turns come after all sections.
SECTIONS: dict[str, tuple[str, str]] = {
    "state": ("system", "Current session state:"),
    "summaries": ("system", "Summary of earlier turns (compacted):"),
    "milestones": ("system", "Milestones from earlier turns:"),
    "recalled": ("system", "Earlier turns of this session that match the query (verbatim):"),
    "past": ("system", "From the user's earlier sessions (verbatim, oldest first, dated):"),
    "memories": ("system", "Relevant long-term memories:"),
    "failures": ("system", "Recent failing steps:"),
    "tools": ("system", "Recent tool outputs:"),
}
TURNS = "turns"


@dataclass
class Candidate:
    """Something that may go into the context. `text` is a line of a section, or for a
    turn the user message and `reply` the assistant's."""

    key: str
    kind: str  # state, focus, results, cart, summary, milestone, memory, failure, turn
    section: str  # a SECTIONS key or TURNS
    text: str
    role: str  # "system", "milestone", "user", "tool", "memory" — for the role boost
    at: datetime | None
    signal: float = 0.0
    order: tuple[int, ...] = (0,)  # position inside its section in the output
    reply: str = ""


@dataclass(frozen=True)
class Score:
    recency: float
    semantic: float
    role: float
    signal: float

    @property
    def total(self) -> float:
        return (
            W_RECENCY * self.recency
            + W_SEMANTIC * self.semantic
            + W_ROLE * self.role
            + W_SIGNAL * self.signal
        )


def score_candidate(
    candidate: Candidate, *, now: datetime, semantic: float, half_life_minutes: float
) -> Score:
    if candidate.at is None:
        recency = 1.0
    else:
        age_minutes = max(0.0, (now - candidate.at).total_seconds() / 60.0)
        recency = math.exp(-math.log(2) * age_minutes / half_life_minutes)
    return Score(
        recency=recency,
        semantic=max(0.0, min(1.0, semantic)),
        role=1.0 if candidate.role in BOOSTED_ROLES else 0.7,
        signal=max(0.0, min(1.0, candidate.signal)),
    )


def candidate_messages(candidate: Candidate) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": candidate.text},
        {"role": "assistant", "content": candidate.reply},
    ]


def content_tokens(candidate: Candidate) -> int:
    """Tokens of the candidate's own text as sent (a turn: its two whole messages)."""
    if candidate.section == TURNS:
        return sum(message_tokens(m["role"], m["content"]) for m in candidate_messages(candidate))
    return count_tokens(candidate.text)


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
    excluded: list[tuple[Candidate, Score, int, str]] = field(default_factory=list)
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
    section_rank = {name: i for i, name in enumerate([*SECTIONS, TURNS])}
    ranked = sorted(
        candidates,
        key=lambda c: (-scores[c.key].total, section_rank[c.section], c.order, c.key),
    )
    costs = {c.key: candidate_cost(c) for c in candidates}
    used = TOKENS_PER_REPLY
    opened: set[str] = set()
    selected: list[Candidate] = []
    excluded: list[tuple[Candidate, Score, int, str]] = []
    by_key = {c.key: c for c in candidates}
    pinned: list[Candidate] = []
    for key in reserved or []:
        candidate = by_key[key]
        if used + costs[key] > min(budget, TOKENS_PER_REPLY + reserve_tokens):
            break  # the window stays contiguous: no older turn without the newer ones
        pinned.append(candidate)
        used += costs[key]
    pinned_keys = {c.key for c in pinned}
    ranked = pinned + [c for c in ranked if c.key not in pinned_keys]
    for candidate in ranked[len(pinned) :]:
        extra = (
            0
            if candidate.section in opened or candidate.section == TURNS
            else section_cost(candidate.section)
        )
        cost = costs[candidate.key] + extra
        if used + cost <= budget:
            selected.append(candidate)
            used += cost
            if candidate.section != TURNS:
                opened.add(candidate.section)
        else:
            alone = (
                TOKENS_PER_REPLY
                + costs[candidate.key]
                + (0 if candidate.section == TURNS else section_cost(candidate.section))
            )
            reason = "larger_than_budget" if alone > budget else "over_budget"
            excluded.append((candidate, scores[candidate.key], costs[candidate.key], reason))

    selected = pinned + selected
    messages = render(selected)
    total = count(messages)
    while total > budget and selected:  # line tokens did not add up exactly: trim
        worst = selected.pop()  # pinned first, then score order: the last is the weakest
        excluded.append((worst, scores[worst.key], costs[worst.key], "over_budget"))
        messages = render(selected)
        total = count(messages)

    order = {c.key: i for i, c in enumerate(ranked)}
    excluded.sort(key=lambda row: order[row[0].key])
    return Packed(
        messages=messages,
        total_tokens=total,
        included=[(c, scores[c.key], costs[c.key]) for c in selected],
        excluded=excluded,
        reserved={c.key for c in selected if c.key in pinned_keys},
    )
