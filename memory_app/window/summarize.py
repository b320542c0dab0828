"""Summaries of a span: extractive first, abstractive (LLM) on top when configured.

Extractive (the default, and the LLM's input): the span's sentences are scored for the
facts an agent needs later — numbers, MPNs/ids, names, decisions, constraints — and the
best ones are kept, in their original order and attributed to their turn, until a token
budget is met. It is faithful (every sentence was said) and cheap; what it drops is
still in the milestones and in the turn log.

Abstractive: the extractive draft goes to an OpenAI-compatible `/chat/completions`
endpoint (through `memory_app.llm`, the client extraction uses too) with the instruction to
keep every number, id and MPN. The call's usage is
returned so the caller can record its cost. Any failure raises `LLMError`, and
the caller falls back to the extractive draft (and says so).
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

from memory_app.llm import ChatCompletion, LLMEndpoint, chat_complete
from memory_app.window.text import (
    CONSTRAINT_RE,
    DATE_RE,
    DECISION_RE,
    NAME_RE,
    REQUIREMENT_RE,
    Sentence,
    TurnText,
    is_acknowledgement,
    mpns_in,
    numeric_values,
    turn_sentences,
)
from memory_app.window.tokens import count_tokens, truncate_to_tokens

_LINE_RE = re.compile(r"^\[t(\d+)\] (?:U|A|S): (.*)$")
SYSTEM_PROMPT = (
    "You condense an agent's conversation notes into a short factual summary. Keep every "
    "number, amount, date, id and part number (MPN) exactly as written, and every decision, "
    "constraint, commitment and open question. Write terse bullet points prefixed with the "
    "turn tag ([t12]) they came from. Do not invent anything."
)


def score_sentence(sentence: Sentence) -> float:
    """How much later turns are likely to need this sentence: an acknowledgement ("OK
    noted (3).") nothing, whoever said it; a value with its meaning (an amount, a date,
    a quantity, a phone number) more than a bare number; the user's own words (the
    intent, and facts only they can give) more than the assistant's."""
    text = sentence.text
    if is_acknowledgement(text) or len(text.split()) < 3:
        return 0.0
    score = 1.0
    score += 3.0 * len(mpns_in(text))
    score += sum(0.5 if kind == "number" else 2.0 for kind, _ in numeric_values(text))
    score += 0.5 * min(4, len(_names_beside_values(text)))
    score += 2.0 if DECISION_RE.search(text) else 0.0
    score += 1.5 if CONSTRAINT_RE.search(text) else 0.0
    # What must (not) happen ("allergic to shellfish") is what a later turn must not get
    # wrong: it outweighs a date the milestones keep anyway.
    score += 3.5 if REQUIREMENT_RE.search(text) else 0.0
    score += 1.5 if sentence.speaker == "user" else 0.0
    # Long sentences must earn their tokens.
    return score / (1.0 + math.log1p(count_tokens(text) / 25.0))


def _names_beside_values(text: str) -> list[str]:
    """The capitalised names of a sentence that are not part of a date ("June 3rd")."""
    dates = [match.span() for match in DATE_RE.finditer(text)]
    return [
        match.group(0)
        for match in NAME_RE.finditer(text)
        if not any(start <= match.start() < end for start, end in dates)
    ]


def summary_budget(
    source_tokens: int, *, ratio: float = 0.3, floor: int = 60, cap: int = 400
) -> int:
    """Tokens a span's summary may take: a share of what it replaces, within bounds."""
    return max(floor, min(cap, int(source_tokens * ratio)))


def _tag(speaker: str) -> str:
    return {"user": "U", "assistant": "A"}.get(speaker, "S")


def select_sentences(sentences: list[Sentence], max_tokens: int) -> list[Sentence]:
    """The best sentences that fit `max_tokens` as lines, in their original order."""
    ranked = sorted(sentences, key=lambda s: (-score_sentence(s), s.position))
    chosen: list[Sentence] = []
    used = 0
    for sentence in ranked:
        if score_sentence(sentence) <= 0:
            break
        cost = count_tokens(
            f"[t{sentence.turn_number}] {_tag(sentence.speaker)}: {sentence.text}\n"
        )
        if used + cost > max_tokens:
            continue
        chosen.append(sentence)
        used += cost
    return sorted(chosen, key=lambda s: s.position)


def render_lines(sentences: list[Sentence]) -> str:
    return "\n".join(f"[t{s.turn_number}] {_tag(s.speaker)}: {s.text}" for s in sentences)


def extractive_summary(turns: list[TurnText], max_tokens: int) -> str:
    """Top sentences of the span, one line each: ``[t12] U: …`` / ``[t12] A: …``."""
    text = render_lines(select_sentences(turn_sentences(turns), max_tokens))
    return text or truncate_to_tokens(
        " ".join(f"[t{t.turn_number}] U: {t.user_message}" for t in turns), max_tokens
    )


def summary_sentences(summaries: list[str]) -> list[Sentence]:
    """Lines of earlier extractive summaries back as sentences (for condensing); prose
    from an LLM summary is split into sentences attributed to no turn (0)."""
    out: list[Sentence] = []
    for summary in summaries:
        for line in summary.splitlines():
            line = line.strip()
            if not line:
                continue
            match = _LINE_RE.match(line)
            if match:
                speaker = {"U": "user", "A": "assistant"}.get(line.split("] ", 1)[1][0], "summary")
                out.append(Sentence(int(match.group(1)), speaker, match.group(2), len(out)))
            else:
                out.append(Sentence(0, "summary", line.lstrip("-• "), len(out)))
    return out


def condense_summaries(summaries: list[str], max_tokens: int) -> str:
    """Several summaries merged into one within `max_tokens`, best lines kept."""
    return render_lines(select_sentences(summary_sentences(summaries), max_tokens))


def abstractive_summary(draft: str, *, endpoint: LLMEndpoint, max_tokens: int) -> ChatCompletion:
    """The draft rewritten by the LLM; raises `LLMError` (the caller keeps the draft)."""
    completion = chat_complete(
        endpoint,
        [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": draft}],
        max_tokens=max_tokens,
    )
    return replace(completion, text=truncate_to_tokens(completion.text, max_tokens))
