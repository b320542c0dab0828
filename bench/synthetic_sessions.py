"""Synthetic shopping conversations with planted facts, for the window's tests and the
token-economy benchmark. Deterministic for a given seed.

Every turn plants one MPN or number (a budget, a price ceiling, a quantity, a date, an
order id, a spec) in natural phrasing, amid the filler an assistant really produces, so
that what compaction keeps can be measured: `SyntheticTurn.planted` lists the values a
good summary + milestones must still contain.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

BRANDS = ["Dell", "Lenovo", "HP", "Asus", "Acer", "Apple", "Samsung", "Logitech", "Bosch"]
CATEGORIES = ["laptop", "monitor", "docking station", "keyboard", "headset", "drill", "SSD"]
CITIES = ["Lyon", "Porto", "Ghent", "Graz", "Turin", "Bergen", "Malmo"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "September"]
FILLER = [
    "Let me know if you want me to narrow this down further.",
    "Happy to help with anything else on your list.",
    "I can also compare warranty options if that matters to you.",
    "Most customers in your situation look at reviews before deciding.",
    "Stock levels change quickly, so it is worth deciding soon.",
    "All of these ship with the standard manufacturer warranty.",
]
TURN_12_FACT = "The delivery must go to our Rotterdam warehouse, loading dock number 417."
TURN_12_QUESTION = "Which loading dock at the Rotterdam warehouse should the delivery go to?"
TURN_12_VALUE = "417"


@dataclass
class SyntheticTurn:
    user_message: str
    assistant_response: str
    planted: list[str] = field(default_factory=list)


def _mpn(rng: random.Random) -> str:
    letters = "".join(rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(rng.randint(2, 3)))
    return f"{letters}-{rng.randint(100, 9999)}{rng.choice(['', 'X', 'B', '-EU'])}"


def _turn(rng: random.Random, number: int) -> SyntheticTurn:
    brand, category = rng.choice(BRANDS), rng.choice(CATEGORIES)
    filler = " ".join(rng.sample(FILLER, 2))
    kind = rng.choice(
        ["mpn", "mpn", "add", "budget", "ceiling", "quantity", "date", "order", "spec"]
    )
    if kind == "mpn":
        mpn = _mpn(rng)
        user = f"Can you tell me more about the {brand} {category}, part {mpn}?"
        answer = f"The {brand} {mpn} is a solid {category} with good reviews. {filler}"
        return SyntheticTurn(user, answer, [mpn])
    if kind == "add":
        mpn, qty = _mpn(rng), rng.randint(2, 40)
        user = f"Please add {mpn} to the cart, {qty} of them."
        answer = f"Done, I added {qty} x {mpn} to your cart. {filler}"
        return SyntheticTurn(user, answer, [mpn, str(qty)])
    if kind == "budget":
        amount = rng.randint(300, 9000)
        user = f"My budget for the {category} is ${amount:,} in total."
        answer = f"Understood, I will keep the total within ${amount:,}. {filler}"
        return SyntheticTurn(user, answer, [str(amount)])
    if kind == "ceiling":
        amount = rng.randint(40, 2500)
        user = f"Nothing over {amount} EUR per unit, please, our finance team is strict."
        answer = f"Noted: a price ceiling of {amount} EUR per unit. {filler}"
        return SyntheticTurn(user, answer, [str(amount)])
    if kind == "quantity":
        qty = rng.randint(3, 250)
        user = f"We need {qty} units for the new {rng.choice(CITIES)} office."
        answer = f"For {qty} units I can check volume pricing with {brand}. {filler}"
        return SyntheticTurn(user, answer, [str(qty)])
    if kind == "date":
        day, month = rng.randint(1, 28), rng.choice(MONTHS)
        user = f"It has to arrive before {month} {day}, the office opens then."
        answer = f"I will filter for delivery before {month} {day}. {filler}"
        return SyntheticTurn(user, answer, [f"{month} {day}"])
    if kind == "order":
        order = rng.randint(100000, 999999)
        user = f"For reference, our previous order number was {order}."
        answer = f"Thanks, I linked order {order} to this conversation. {filler}"
        return SyntheticTurn(user, answer, [str(order)])
    inches = rng.choice([13.3, 14, 15.6, 16, 17.3, 24, 27, 32])
    user = f"The screen should be at least {inches} inches, ideally matte."
    answer = f"I will only show {category}s with {inches} inch screens or larger. {filler}"
    return SyntheticTurn(user, answer, [str(inches)])


def synthetic_session(turns: int = 200, seed: int = 6) -> list[SyntheticTurn]:
    """`turns` turns; turn 12 (if reached) plants TURN_12_FACT."""
    rng = random.Random(seed)
    out = []
    for number in range(1, turns + 1):
        if number == 12:
            out.append(
                SyntheticTurn(
                    TURN_12_FACT,
                    "Noted, dock 417 at the Rotterdam warehouse. "
                    + " ".join(rng.sample(FILLER, 2)),
                    [TURN_12_VALUE],
                )
            )
        else:
            out.append(_turn(rng, number))
    return out


def value_present(value: str, text: str) -> bool:
    """Whether a planted value is in `text`: numbers as whole numbers (thousands
    separators ignored), anything else verbatim."""
    flat = text.replace(",", "")
    if re.fullmatch(r"\d+(?:\.\d+)?", value):
        return re.search(rf"(?<![\d.]){re.escape(value)}(?![\d]|\.\d)", flat) is not None
    return value in text
