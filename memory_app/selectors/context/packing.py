"""Packing of scored context candidates under a token budget (seed 004).

What goes in first, in this order of priority, is what an agent's next call can least
do without:

1. The newest turn (the user's latest message and the reply): it has the first claim on
   the whole budget. Larger than the budget alone, it goes in cut to fit it rather than
   not at all (`truncation.turn_cut`): each of its messages keeps its beginning and its
   end around ` … [cut N tokens] … `, the room shared evenly between them (what a short
   message does not need goes to the other), and the context lists it as included and,
   with the tokens cut, as excluded for `truncated`. It then takes the whole budget.
2. The rest of the window (seed 004's `recent_msgs[-keep_last_turns:]`), newest first,
   while the turns take no more than `reserve_tokens` (a share of the budget): the agent
   sees what was just said, and a long session's many milestone lines cannot crowd the
   conversation itself out.
3. Facts (`FACTS`): the session's state, failures and tool outputs, and what answers the
   query: long-term memories and recalled turns, of this session and of the user's
   earlier ones.
4. Digests (`DIGESTS`): summaries and milestones of compacted turns.
5. Older material: the window's turns past the share, older open turns, a rotated
   predecessor's open turns.

Tiers 1-2 are the reservation; within each of tiers 3-5 the candidates compete greedily
by score, each going in while it fits.

Verbatim turns are one run from the newest backwards: they render as consecutive chat
messages that nothing marks as incomplete, so a turn goes in only after every newer one
did (a turn ranks no higher than the newer turns before it). The first that does not
fit ends the run (`over_budget`); what is older, or older than a turn the eligibility
left out, is `not_contiguous`.

The same content is packed once (`unrepeated`): a candidate showing a turn the context
already shows (a past turn and a predecessor's line of the same turn) is a `duplicate`,
and so is a milestone restating a turn shown whole; a summary loses its lines about such
turns. The tiers put what shows a turn (the window, recalled and past turns) before what
restates it, so one pass in priority order finds them.

The first line of a section pays for the section's message framing and header. The
rendered messages are then counted exactly with the tokenizer, and should rounding
between line and message counts overshoot, the last lines packed (the weakest) are
dropped until the total is within budget: the budget is a hard guarantee, not an
estimate. The output order is fixed (sections, then turns oldest first), never by score,
so the same inputs always give the same messages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from memory_app.selectors.context.candidate import (
    SECTIONS,
    TURNS,
    Candidate,
    candidate_messages,
    unrepeated,
)
from memory_app.selectors.context.scoring import Score
from memory_app.selectors.context.truncation import turn_cut
from memory_app.window.tokens import TOKENS_PER_REPLY, count_tokens, message_tokens, messages_tokens

Excluded = tuple[Candidate, Score, int, str]  # candidate, score, cost, reason

FACTS = frozenset(
    {"state", "focus", "results", "cart", "failure", "tool_output", "memory",
     "related_memory", "recalled_turn", "past_turn"}
)  # fmt: skip
DIGESTS = frozenset({"summary", "milestone", "previous_summary", "previous_milestone"})


def priority(candidate: Candidate) -> int:
    """The candidate's tier after the reservation: 0 facts, 1 digests, 2 older."""
    if candidate.kind in FACTS:
        return 0
    return 1 if candidate.kind in DIGESTS else 2


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
    truncated: dict[str, int] = field(default_factory=dict)  # key → tokens cut from it


def pack(
    candidates: list[Candidate],
    scores: dict[str, Score],
    budget: int,
    *,
    run: list[str] | None = None,
    window: int = 0,
    reserve_tokens: int = 0,
    count: Callable[[list[dict[str, str]]], int] = messages_tokens,
) -> Packed:
    """`run`: the keys of the session's verbatim turns, newest first, offered or not; its
    first `window` are the window, reserved (the newest within `budget`, the others
    within `reserve_tokens`); then the rest in priority order; exact under `budget`."""
    run = run or []
    candidates, truncated = _newest_fitted(candidates, run[:window], budget)
    costs = {c.key: candidate_cost(c) for c in candidates}
    by_key = {c.key: c for c in candidates}
    pinned = _reserve([by_key.get(key) for key in run[:window]], costs, budget, reserve_tokens)
    pinned_keys = {c.key for c in pinned}
    ranked = pinned + _ranked([c for c in candidates if c.key not in pinned_keys], scores, run)
    packer = _Greedy(scores, costs, budget, run)
    for candidate in pinned:
        packer.take(candidate, costs[candidate.key])
    for candidate in ranked[len(pinned) :]:
        packer.offer(candidate)
    selected, excluded = packer.selected, packer.excluded
    messages, total = _trimmed(selected, excluded, scores, costs, budget, count)
    order = {c.key: i for i, c in enumerate(ranked)}
    excluded.sort(key=lambda row: order[row[0].key])
    return Packed(
        messages=messages,
        total_tokens=total,
        included=[(c, scores[c.key], costs[c.key]) for c in selected],
        excluded=excluded,
        reserved={c.key for c in selected if c.key in pinned_keys},
        truncated={c.key: truncated[c.key] for c in selected if c.key in truncated},
    )


def _newest_fitted(
    candidates: list[Candidate], window: list[str], budget: int
) -> tuple[list[Candidate], dict[str, int]]:
    """`candidates` with the newest turn of the `window` cut to fit `budget` when it is
    larger alone (`turn_cut`), and the tokens cut by key."""
    newest = next((c for c in candidates if window and c.key == window[0]), None)
    if newest is None or TOKENS_PER_REPLY + candidate_cost(newest) <= budget:
        return candidates, {}
    cut = turn_cut(newest, budget)
    if cut is None:
        return candidates, {}
    fitted = [cut.candidate if c is newest else c for c in candidates]
    return fitted, {newest.key: cut.tokens_cut}


def _ranked(
    candidates: list[Candidate], scores: dict[str, Score], run: list[str]
) -> list[Candidate]:
    """Tier first (`priority`), then best score; ties by section order, then position,
    then key. A turn ranks at most as high as every newer turn of `run`, newest first
    on ties, so that the turns come in the order they can join the run."""
    section_rank = {name: i for i, name in enumerate([*SECTIONS, TURNS])}
    offered = {c.key for c in candidates}
    position = {key: (i,) for i, key in enumerate(run)}
    capped: dict[str, float] = {}
    ceiling = float("inf")
    for key in run:
        if key in offered:
            ceiling = capped[key] = min(ceiling, scores[key].total)
    return sorted(
        candidates,
        key=lambda c: (
            priority(c),
            -capped.get(c.key, scores[c.key].total),
            section_rank[c.section],
            position.get(c.key, c.order),
            c.key,
        ),
    )


def _reserve(
    window: list[Candidate | None], costs: dict[str, int], budget: int, reserve_tokens: int
) -> list[Candidate]:
    """The window's turns, newest first: the newest while it fits the `budget`, the
    next while their tokens (after the reply priming) stay within `reserve_tokens`; the
    first that does not fit, or is not offered, ends the reservation, so the window
    stays contiguous: no older turn without the newer ones."""
    pinned: list[Candidate] = []
    used = TOKENS_PER_REPLY
    limit = min(budget, TOKENS_PER_REPLY + reserve_tokens)
    for candidate in window:
        room = limit if pinned else budget
        if candidate is None or used + costs[candidate.key] > room:
            break
        pinned.append(candidate)
        used += costs[candidate.key]
    return pinned


class _Greedy:
    """The packing after the reservation: each candidate offered in rank order goes in
    while it fits with the tokens already taken (the first line of a section also pays
    for its header), unless it would leave a hole in the run of verbatim turns
    (`not_contiguous`) or repeat what is in (`duplicate`); the others are excluded, as
    `larger_than_budget` when they would not fit alone."""

    def __init__(
        self, scores: dict[str, Score], costs: dict[str, int], budget: int, run: list[str]
    ) -> None:
        self.scores, self.costs, self.budget = scores, costs, budget
        self.run = run
        self.next_turn: int | None = 0  # the place in `run` of the next turn; None: ended
        self.used = TOKENS_PER_REPLY
        self.opened: set[str] = set()
        self.shown: set[str] = set()  # turns shown whole
        self.seen: set[str] = set()  # turns shown in any form
        self.selected: list[Candidate] = []
        self.excluded: list[Excluded] = []

    def offer(self, candidate: Candidate) -> None:
        if candidate.section == TURNS and not self._joins_run(candidate):
            self._exclude(candidate, "not_contiguous")
            return
        kept = unrepeated(candidate, self.shown, self.seen)
        if kept is None:
            self._exclude(candidate, "duplicate")
            return
        if kept is not candidate:
            self.costs[kept.key] = candidate_cost(kept)
        opened = kept.section == TURNS or kept.section in self.opened
        header = 0 if opened else section_cost(kept.section)
        cost = self.costs[kept.key] + header
        if self.used + cost <= self.budget:
            self.take(kept, cost)
            return
        alone = TOKENS_PER_REPLY + self.costs[kept.key] + header
        self._exclude(kept, "larger_than_budget" if alone > self.budget else "over_budget")
        if kept.section == TURNS:
            self.next_turn = None

    def _joins_run(self, turn: Candidate) -> bool:
        """Whether `turn` is the next of the run, every newer turn being in."""
        at = self.next_turn
        return at is not None and at < len(self.run) and self.run[at] == turn.key

    def take(self, candidate: Candidate, cost: int) -> None:
        self.selected.append(candidate)
        self.used += cost
        if candidate.section != TURNS:
            self.opened.add(candidate.section)
        elif self.next_turn is not None:
            self.next_turn += 1
        if candidate.shows:
            self.seen.add(candidate.shows)
            if candidate.shows_whole:
                self.shown.add(candidate.shows)

    def _exclude(self, candidate: Candidate, reason: str) -> None:
        cost = self.costs[candidate.key]
        self.excluded.append((candidate, self.scores[candidate.key], cost, reason))


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
