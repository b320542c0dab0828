"""Turn text split into sentences, and the patterns that make a sentence worth keeping:
part numbers (MPNs), amounts, dates, ids, names, decisions.

Shared by the extractive summariser and the milestone extractor so that both agree on
what a "fact" looks like."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_MONTHS = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
# An MPN: one token of capitals and digits (dashes, dots and slashes inside), holding at
# least one letter and one digit, 4+ characters: "XPS-15-9530", "RTX4090", "MX-1042/B".
MPN_RE = re.compile(r"\b(?=[A-Z0-9./-]*\d)(?=[A-Z0-9./-]*[A-Z])[A-Z0-9][A-Z0-9./-]{2,}[A-Z0-9]\b")
DATE_RE = re.compile(
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b{_MONTHS}\.? \d{{1,2}}(?:st|nd|rd|th)?(?:,? \d{{4}})?\b"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)? (?:of )?{_MONTHS}(?:,? \d{{4}})?\b"
)
MONEY_RE = re.compile(
    r"[$€£]\s?\d[\d,]*(?:\.\d+)?(?:\s?[kKmM]\b)?"
    r"|\b\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|CHF|dollars|euros|pounds)\b"
)
QUANTITY_RE = re.compile(
    r"\b\d[\d,]*(?:\.\d+)?\s?(?:%|percent|kg|g|lbs?|GB|TB|MB|GHz|MHz|mAh|Wh|W|V|mm|cm|m|"
    r"inch(?:es)?|in\b|\"|hours?|hrs?|minutes?|mins?|days?|nights?|weeks?|months?|years?|"
    r"units?|pcs|pieces|items|seats|licen[cs]es|users|people|persons|adults|children|kids|"
    r"guests|rooms|tickets)(?![A-Za-z])"  # "7 matches" is no "7 m"
)
# A phone number: an optional country code, then three to five groups of digits (the
# first may be in brackets) split by single spaces, dots or dashes: "+351 912 345 678",
# "(555) 123-4567". Dates are matched first, so "2026-03-14" stays a date.
PHONE_RE = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{2,4}\)|\d{2,4})(?:[ .-]\d{2,4}){2,4}(?![\w-])"
)
MIN_PHONE_DIGITS = 7
NUMBER_RE = re.compile(r"#?\b\d[\d,]*(?:\.\d+)?\b")
NAME_RE = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s[A-Z][a-z]+)*\b")
DECISION_RE = re.compile(
    r"\b(?:decid\w*|chose|choose|chosen|go with|going with|pick(?:ed)?|settle[d]? on|"
    r"confirm\w*|agree[d]?|let'?s|we'?ll take|i'?ll take|ordered|place (?:the|an|my) order|"
    r"buy|bought|"
    r"prefer\w*|switch(?:ed)? to|instead)\b",
    re.IGNORECASE,
)
CONSTRAINT_RE = re.compile(
    r"\b(?:budget|under|below|less than|no more than|at most|at least|max(?:imum)?|"
    r"min(?:imum)?|ceiling|limit|cap|must|need(?:s|ed)?|require[sd]?|deadline|by|before|"
    r"until|no later than|within)\b",
    re.IGNORECASE,
)
COMMITMENT_RE = re.compile(
    r"\b(?:i'?ll|i will|we'?ll|we will|i'?m going to|will (?:send|email|call|check|"
    r"follow up|remind|ship|deliver|notify|get back)|promise[d]?|remind(?:er)?|"
    r"follow(?:-| )up)\b",
    re.IGNORECASE,
)
HEDGE_RE = re.compile(
    r"\b(?:not sure|don'?t know|unclear|will check|get back to you|tbd|to be confirmed|"
    r"can'?t confirm|need to check|later)\b",
    re.IGNORECASE,
)
# Words that acknowledge without saying anything: a sentence made of them alone (and of
# counters such as "(3)") is boilerplate, whoever said it: "OK noted (1).", "Sure, will
# do!", "Thanks!", "Got it, perfect."
_ACK_TEXT = (
    "ok okay k noted note got it sure thanks thank you great cool yes yep yeah no hi "
    "hello hey understood done will do perfect alright all right fine certainly "
    "absolutely of course sounds good nice awesome excellent wonderful np problem i "
    "i'll i've we'll that's that is has been have so well"
)
_ACK_WORDS = frozenset(_ACK_TEXT.split())
_WORD_RE = re.compile(r"[a-z]+(?:'[a-z]+)?")
# What a user states about what must or must not happen, without a number to hold it:
# health and diet, musts and can'ts ("Ana is allergic to shellfish", "we can't fly").
REQUIREMENT_RE = re.compile(
    r"\b(?:allerg\w*|intoleran\w*|vegetarian|vegan|gluten|lactose|kosher|halal|diabet\w*|"
    r"pregnan\w*|wheelchair|accessib\w*|must(?:n'?t)?|can'?t|cannot|never|avoid|"
    r"(?:need|have|has) to|require[sd]?)\b",
    re.IGNORECASE,
)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[^a-z])|\n+")


@dataclass(frozen=True)
class TurnText:
    """The parts of a turn the window cares about."""

    turn_number: int
    user_message: str
    assistant_response: str
    intent_data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Sentence:
    turn_number: int
    speaker: str  # "user" | "assistant" | "summary"
    text: str
    position: int  # order in the span, for stable output


def split_sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_SPLIT.split(text or "") if part and part.strip()]


def turn_sentences(turns: list[TurnText]) -> list[Sentence]:
    out: list[Sentence] = []
    for turn in turns:
        for speaker, text in (("user", turn.user_message), ("assistant", turn.assistant_response)):
            for sentence in split_sentences(text):
                out.append(Sentence(turn.turn_number, speaker, sentence, len(out)))
    return out


def mpns_in(text: str) -> list[str]:
    """MPN-like tokens, excluding pure dates/amounts such as "2026-03-14"."""
    found = []
    for match in MPN_RE.finditer(text):
        token = match.group(0).strip(".-/")
        if DATE_RE.fullmatch(token) or not re.search(r"[A-Z]", token):
            continue
        if re.fullmatch(r"\d+[A-Z]{1,2}", token) and QUANTITY_RE.fullmatch(token):
            continue  # "16GB", "4K" are quantities, not parts
        found.append(token)
    return found


def numeric_values(text: str) -> list[tuple[str, str]]:
    """(kind, value) for every amount, date, phone number (one value, not its digit
    groups), quantity and bare number, leftmost first,
    overlapping matches resolved in favour of the more specific pattern; numbers that
    are part of an MPN are not values."""
    taken: list[tuple[int, int]] = [m.span() for m in MPN_RE.finditer(text)]
    out: list[tuple[int, str, str]] = []
    for kind, pattern in (
        ("date", DATE_RE),
        ("phone", PHONE_RE),
        ("money", MONEY_RE),
        ("quantity", QUANTITY_RE),
        ("number", NUMBER_RE),
    ):
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(start < t_end and end > t_start for t_start, t_end in taken):
                continue
            if kind == "phone" and len(digits_of(match.group(0))) < MIN_PHONE_DIGITS:
                continue
            taken.append((start, end))
            out.append((start, kind, match.group(0).strip()))
    return [(kind, value) for _, kind, value in sorted(out)]


def is_acknowledgement(text: str) -> bool:
    """Whether a sentence only acknowledges ("OK noted (1).", "Thanks!"): no word beyond
    the acknowledging ones, numbers and punctuation aside."""
    words = _WORD_RE.findall(text.lower().replace("\u2019", "'"))
    return bool(words) and all(word in _ACK_WORDS for word in words)


def digits_of(value: str) -> str:
    """A value reduced to its digits, to compare "$1,450" with "1450"."""
    return re.sub(r"[^\d.]", "", value).strip(".")
