"""What may go into a context: a `Candidate`, the sections it renders in, its tokens.

Candidates are lines grouped into sections (one chat message per section, in the order
of `SECTIONS`) or whole turns (a user and an assistant message, each only when it has
text, after every section).

A candidate names the conversation turn it shows (`shows`: a turn verbatim, a recalled
turn's passage) or the turns its lines restate (`restates`: a milestone, the lines of a
summary), by `turn_ref`, so that packing can leave out what the context already holds
(`unrepeated`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from memory_app.window.tokens import count_tokens, message_tokens

# Section → (role, header), in output order. Turns come after all sections.
SECTIONS: dict[str, tuple[str, str]] = {
    "state": ("system", "Current session state:"),
    "summaries": ("system", "Summary of earlier turns (compacted):"),
    "milestones": ("system", "Milestones from earlier turns:"),
    "recalled": ("system", "Earlier turns of this session that match the query (verbatim):"),
    "past": ("system", "From the user's earlier sessions (verbatim, oldest first, dated):"),
    "memories": ("system", "Relevant long-term memories (dated):"),
    "failures": ("system", "Recent failing steps:"),
    "tools": ("system", "Recent tool outputs:"),
}
TURNS = "turns"
# A line's own label ("[turns 3-9] ", "[t12] "), kept when the line it starts is dropped.
_LABEL = re.compile(r"\[[^\]\n]*\] ")


@dataclass
class Candidate:
    """Something that may go into the context. `text` is a line of a section, or for a
    turn the user message and `reply` the assistant's."""

    key: str
    kind: str  # state, focus, results, cart, summary, milestone, memory, failure, turn…
    section: str  # a SECTIONS key or TURNS
    text: str
    role: str  # "system", "milestone", "user", "tool", "memory" — for the role boost
    at: datetime | None
    signal: float = 0.0
    order: tuple[int, ...] = (0,)  # position inside its section in the output
    reply: str = ""
    # The turn (`turn_ref`) it shows, and whether it shows the whole turn (a recalled
    # turn may show the passage that answers).
    shows: str = ""
    shows_whole: bool = True
    # Per line of `text`: the turn the line restates, "" for a line that restates none.
    restates: tuple[str, ...] = ()


@dataclass
class FoundCandidates:
    """Candidates the memory search found, with the semantic score of each (the
    search's cosine; for a turn, the best over its thread window) and the keys the search
    relates to the query by more than a vector (`SearchHit.beyond_vector`). The context's
    similarity floors let those through."""

    candidates: list[Candidate] = field(default_factory=list)
    semantic: dict[str, float] = field(default_factory=dict)
    supported: set[str] = field(default_factory=set)

    def add(self, candidate: Candidate, *, semantic: float, supported: bool) -> None:
        self.candidates.append(candidate)
        self.semantic[candidate.key] = semantic
        if supported:
            self.supported.add(candidate.key)


def turn_ref(session_id: Any, turn_number: int) -> str:
    """What names one conversation turn across candidates of every source."""
    return f"{session_id}:{turn_number}"


def candidate_messages(candidate: Candidate) -> list[dict[str, str]]:
    """A turn candidate as its chat messages: the user's and the assistant's, each only
    when it has text (a provider refuses a message without any, and a turn recorded
    without a response is the user's message alone)."""
    return [
        {"role": role, "content": content}
        for role, content in (("user", candidate.text), ("assistant", candidate.reply))
        if content.strip()
    ]


def unrepeated(candidate: Candidate, shown: set[str], seen: set[str]) -> Candidate | None:
    """The candidate less what the context already holds, or None when nothing is left.
    `seen`: the turns it shows in any form; `shown`: those it shows whole. A candidate
    showing a seen turn is none; a milestone restating a turn shown whole is none; a
    summary loses its lines restating one (its label moves to its first line left)."""
    if candidate.shows and candidate.shows in seen:
        return None
    if not shown.intersection(candidate.restates):
        return candidate
    lines = candidate.text.split("\n")
    kept = [(line, ref) for line, ref in zip(lines, candidate.restates, strict=True)
            if ref not in shown]  # fmt: skip
    if not kept:
        return None
    label = _LABEL.match(lines[0])
    if label and candidate.restates[0] in shown:
        kept[0] = (label.group(0) + kept[0][0], kept[0][1])
    return replace(
        candidate,
        text="\n".join(line for line, _ in kept),
        restates=tuple(ref for _, ref in kept),
    )


def content_tokens(candidate: Candidate) -> int:
    """Tokens of the candidate's own text as sent (a turn: its two whole messages)."""
    if candidate.section == TURNS:
        return sum(message_tokens(m["role"], m["content"]) for m in candidate_messages(candidate))
    return count_tokens(candidate.text)
