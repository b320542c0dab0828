"""Milestone notes: the structured facts of a span that a prose summary may blur.

A summary is lossy by design; milestones are what must survive it: the items (MPNs)
mentioned, the selections made, constraints (budgets, price ceilings, dates,
quantities, and what the user says must or must not happen: "allergic to shellfish"),
ids (order numbers, phone numbers, each one value), decisions, commitments and open
questions, each with the turn it came from. A number is kept with its meaning (its
unit, its currency, the sentence it was said in) and only when it means something:
an acknowledgement ("OK noted (3).") holds none, a bare number of the assistant's
without a constraint word is not the user's fact, and a number that labels its sentence
("Turn 48: …") or counts things it does not name ("8 more things") is no value at all.
An id-like token ("XPS-15-9530", "X1234567") is an item (a part number) only in a turn
about shopping (a part, a product, the cart, an order, a price…); elsewhere it is an id
when its sentence says so ("my passport number is …"), else nothing. They are plain JSON so that the
context can include them one line at a time, and merging two spans' milestones is a set
union (condensed summaries keep them all, up to a per-kind cap that drops the oldest).
"""

from __future__ import annotations

import re
from typing import Any

from memory_app.window.text import (
    COMMITMENT_RE,
    CONSTRAINT_RE,
    DECISION_RE,
    HEDGE_RE,
    REQUIREMENT_RE,
    Sentence,
    TurnText,
    digits_of,
    is_acknowledgement,
    mpns_in,
    numeric_values,
    turn_sentences,
)

KINDS = (
    "items",
    "selections",
    "constraints",
    "ids",
    "decisions",
    "commitments",
    "open_questions",
)
MAX_TEXT_CHARS = 200
_ID_CONTEXT = re.compile(
    r"\b(?:order|ticket|invoice|ref(?:erence)?|case|po|quote|account|tracking|id|number|no\.?|"
    r"code|passport|licen[cs]e|booking|reservation|confirmation|membership|flight)"
    r"\b|#",
    re.IGNORECASE,
)
_SELECT_RE = re.compile(
    r"\b(?:add(?:ed)?|put|select(?:ed)?|take|took|choose|chose|go with|going with|"
    r"order(?:ed)?|buy|bought|cart)\b",
    re.IGNORECASE,
)
_BUDGET_RE = re.compile(r"\b(?:budget|spend|afford)\b", re.IGNORECASE)
_CEILING_RE = re.compile(
    r"\b(?:under|below|less than|no more than|nothing over|not over|at most|max(?:imum)?|"
    r"ceiling|cap|cheaper than)\b",
    re.IGNORECASE,
)
# A turn about shopping: an id-like token in it is a part number.
_SHOPPING_RE = re.compile(
    r"[$€£]|\b(?:parts?|products?|models?|items?|sku|mpn|buy|bought|purchas\w*|order\w*|cart|"
    r"basket|checkout|pric\w*|costs?|cheap\w*|expensive|stock|ship\w*|deliver\w*|add|added|"
    r"select\w*|spec\w*|warranty|discount|units?)\b",
    re.IGNORECASE,
)
# A number that labels its sentence rather than saying a value: "Turn 48:", "Step 3 -".
_LABEL_RE = re.compile(r"^\W*[A-Za-z]+\s+#?(?P<number>\d+)\s*[:)\-\u2013\u2014]")
# A count of things left unnamed: "8 more things", "2 others", "3 of them".
_UNNAMED_COUNT_RE = re.compile(
    r"(?<![\d.,])(?P<number>\d+)\s+(?:(?:more|other|further|extra)\s+)?"
    r"(?:things?|stuff|ones|others|of\s+them|more)\b",
    re.IGNORECASE,
)
_DEADLINE_RE = re.compile(r"\b(?:by|before|until|deadline|no later than|due)\b", re.IGNORECASE)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_TEXT_CHARS else text[: MAX_TEXT_CHARS - 1] + "…"


def empty_milestones() -> dict[str, list[dict[str, Any]]]:
    return {kind: [] for kind in KINDS}


def _constraint_kind(kind: str, sentence: str) -> str:
    if kind == "date":
        return "date"
    if kind == "money":
        if _BUDGET_RE.search(sentence):
            return "budget"
        if _CEILING_RE.search(sentence):
            return "price_ceiling"
        return "price"
    if kind == "quantity":
        return "quantity"
    return "number"


def extract_milestones(
    turns: list[TurnText],
    *,
    cart_before: list[dict[str, Any]] | None = None,
    cart_after: list[dict[str, Any]] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """Milestones of a span of turns. `cart_before`/`cart_after` are the cart snapshots
    (`[{mpn, quantity, …}]`) before the span's first turn and after its last one: what
    was added or changed in between is a selection made in the span, whatever the text
    said."""
    found = _Found()
    shopping = {
        turn.turn_number
        for turn in turns
        if _SHOPPING_RE.search(f"{turn.user_message}\n{turn.assistant_response}")
        or (turn.intent_data or {}).get("mpn")
        or (turn.intent_data or {}).get("mpns")
    }
    for sentence in turn_sentences(turns):
        _note_sentence(found, sentence, sentence.turn_number in shopping)
    for turn_text in turns:
        _note_intent(found, turn_text)
    last_turn = turns[-1].turn_number if turns else 0
    _note_cart(found.out, cart_before or [], cart_after or [], last_turn)
    return found.out


class _Found:
    """The milestones found so far, each (kind, key) once."""

    def __init__(self) -> None:
        self.out = empty_milestones()
        self.seen: set[tuple[str, str]] = set()

    def add(self, kind: str, key: str, entry: dict[str, Any]) -> bool:
        """Add `entry` unless its (kind, key) is there already; whether it was new."""
        if (kind, key) in self.seen:
            return False
        self.seen.add((kind, key))
        self.out[kind].append(entry)
        return True


def _note_sentence(found: _Found, sentence: Sentence, shopping: bool) -> None:
    """The items, values, decisions, commitments and open questions of one sentence;
    `shopping`: whether its turn is about shopping."""
    text, turn = sentence.text, sentence.turn_number
    if is_acknowledgement(text):
        return
    clipped = _clip(text)
    mpns = _note_tokens(found, sentence, clipped, shopping)
    values = _meant_values(text)
    new_values = _note_values(found, values, sentence, clipped)
    if sentence.speaker == "user" and not values and REQUIREMENT_RE.search(text):
        entry = {"kind": "requirement", "value": "", "turn": turn, "text": clipped}
        found.add("constraints", _entry_key("constraints", entry), entry)
    # An answer that only restates values already noted ("I will keep the total
    # within $2,214") is not kept again as a commitment: the context would pay twice.
    restated = bool(values) and not new_values
    if DECISION_RE.search(text) and (mpns or sentence.speaker == "user"):
        found.add("decisions", clipped.lower(), {"turn": turn, "text": clipped})
    if sentence.speaker == "assistant" and COMMITMENT_RE.search(text) and not restated:
        found.add("commitments", clipped.lower(), {"turn": turn, "text": clipped})
    if text.rstrip().endswith("?") and (sentence.speaker == "assistant" or HEDGE_RE.search(text)):
        found.add("open_questions", clipped.lower(), {"turn": turn, "text": clipped})


def _note_tokens(found: _Found, sentence: Sentence, clipped: str, shopping: bool) -> list[str]:
    """A sentence's id-like tokens: items (and the user's selections) when the sentence or
    its turn is about shopping, else ids when the sentence names an id; the items."""
    text, turn = sentence.text, sentence.turn_number
    tokens = mpns_in(text)
    if not (shopping or _SHOPPING_RE.search(text)):
        if _ID_CONTEXT.search(text):
            for token in tokens:
                found.add("ids", token, {"value": token, "turn": turn, "text": clipped})
        return []
    for mpn in tokens:
        found.add("items", mpn, {"mpn": mpn, "turn": turn, "text": clipped})
        if sentence.speaker == "user" and _SELECT_RE.search(text):
            found.add("selections", mpn, {"mpn": mpn, "turn": turn, "source": "text"})
    return tokens


def _meant_values(text: str) -> list[tuple[str, str]]:
    """The sentence's values, without the numbers that label it or count unnamed things."""
    meaningless = {m.group("number") for m in _UNNAMED_COUNT_RE.finditer(text)}
    label = _LABEL_RE.match(text)
    if label:
        meaningless.add(label.group("number"))
    return [
        (kind, value)
        for kind, value in numeric_values(text)
        if not (kind == "number" and value.lstrip("#") in meaningless)
    ]


def _note_values(
    found: _Found, values: list[tuple[str, str]], sentence: Sentence, clipped: str
) -> int:
    """A sentence's numbers as ids (a phone number, a long number said as one) or
    constraints; how many were new. A bare number without a constraint word is kept
    as a "fact" when the user said it, not when the assistant did."""
    text, turn = sentence.text, sentence.turn_number
    new_values = 0
    for kind, value in values:
        if kind == "phone" or (
            kind == "number" and _ID_CONTEXT.search(text) and len(value.lstrip("#")) >= 4
        ):
            ident = value.lstrip("#")
            new_values += found.add("ids", ident, {"value": ident, "turn": turn, "text": clipped})
            continue
        constraint = _constraint_kind(kind, text)
        if constraint == "number" and not CONSTRAINT_RE.search(text):
            if sentence.speaker != "user":
                continue
            constraint = "fact"
        if constraint == "date" and _DEADLINE_RE.search(text):
            constraint = "deadline"
        entry = {"kind": constraint, "value": value, "turn": turn, "text": clipped}
        new_values += found.add("constraints", _entry_key("constraints", entry), entry)
    return new_values


def _note_intent(found: _Found, turn_text: TurnText) -> None:
    """The items a turn's structured intent names directly, and its selections."""
    intent = turn_text.intent_data or {}
    number = turn_text.turn_number
    named = [intent.get("mpn"), *(intent.get("mpns") or [])]
    for mpn in [m for m in named if isinstance(m, str) and m]:
        found.add("items", mpn, {"mpn": mpn, "turn": number, "text": ""})
        if re.search(r"select|cart|add|order|buy", str(intent.get("intent", "")), re.I):
            found.add("selections", mpn, {"mpn": mpn, "turn": number, "source": "intent"})


def _note_cart(
    out: dict[str, list[dict[str, Any]]],
    cart_before: list[dict[str, Any]],
    cart_after: list[dict[str, Any]],
    last_turn: int,
) -> None:
    """Each row added to the cart or changed in quantity over the span is a selection
    at its last turn, replacing any other selection of that item."""
    before = {row["mpn"]: row for row in cart_before}
    for row in cart_after:
        previous = before.get(row["mpn"])
        if previous is None or previous.get("quantity") != row.get("quantity"):
            out["selections"] = [s for s in out["selections"] if s["mpn"] != row["mpn"]]
            out["selections"].append(
                {
                    "mpn": row["mpn"],
                    "turn": last_turn,
                    "source": "cart",
                    "quantity": row.get("quantity", 1),
                }
            )


def _entry_key(kind: str, entry: dict[str, Any]) -> str:
    if kind in ("items", "selections"):
        return str(entry.get("mpn"))
    if kind == "ids":
        return str(entry.get("value"))
    if kind == "constraints":
        # One value per turn, whichever sentence said it first ("$2,214" by the user and
        # "$2,214" in the answer, "14 inches" and "14 inch" are one constraint).
        value = str(entry.get("value", ""))
        if not value:  # a requirement: its words are the constraint
            return str(entry.get("text", "")).lower()
        norm = value.lower() if entry.get("kind") in ("date", "deadline") else digits_of(value)
        return f"{norm or value}:{entry.get('turn')}"
    return str(entry.get("text", "")).lower()


def merge_milestones(
    parts: list[dict[str, list[dict[str, Any]]]], *, max_per_kind: int = 400
) -> dict[str, list[dict[str, Any]]]:
    """The union of several spans' milestones, oldest first. An item or id mentioned
    again keeps its first mention; beyond `max_per_kind` entries of one kind the oldest
    are dropped (the turns themselves are still in the turn log)."""
    out = empty_milestones()
    for kind in KINDS:
        seen: dict[str, int] = {}
        for part in parts:
            for entry in part.get(kind, []):
                key = _entry_key(kind, entry)
                if key in seen:
                    if kind == "selections":  # the later selection wins (quantity)
                        out[kind][seen[key]] = entry
                    continue
                seen[key] = len(out[kind])
                out[kind].append(entry)
        out[kind].sort(key=lambda entry: entry.get("turn", 0))
        out[kind] = out[kind][-max_per_kind:]
    return out


def milestone_lines(milestones: dict[str, list[dict[str, Any]]]) -> list[tuple[str, int, str]]:
    """(key, turn, line) per entry: the compact lines the context includes one by one."""
    lines: list[tuple[str, int, str]] = []
    for kind in KINDS:
        for entry in milestones.get(kind, []):
            turn = int(entry.get("turn", 0))
            if kind == "items":
                body = f"item {entry['mpn']}" + (f": {entry['text']}" if entry.get("text") else "")
            elif kind == "selections":
                quantity = f" x{entry['quantity']}" if entry.get("quantity") else ""
                body = f"selected {entry['mpn']}{quantity}"
            elif kind == "constraints":
                value = f" {entry['value']}" if entry.get("value") else ""
                body = f"{entry['kind']}{value}: {entry['text']}"
            elif kind == "ids":
                body = f"id {entry['value']}: {entry['text']}"
            else:
                body = f"{kind.rstrip('s').replace('_', ' ')}: {entry['text']}"
            lines.append((f"{kind}:{_entry_key(kind, entry)}", turn, f"[t{turn}] {body}"))
    return lines
