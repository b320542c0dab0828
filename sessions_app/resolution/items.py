"""What the resolver knows of an item and what it answers, and how it reads items:
their words (name, type, MPN, descriptive fields; fuzzy similarity of tokens) and their
numeric attributes (price, weight…) from free-form data."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from difflib import SequenceMatcher
from typing import Any, Literal

from sessions_app.resolution.vocabulary import ATTRIBUTE_KEYS, FILLER, NAME_KEYS, NUMBER_RE

Status = Literal["resolved", "ambiguous", "unresolved"]


@dataclass(frozen=True)
class Item:
    """What the resolver knows of a fetched item."""

    mpn: str
    name: str = ""
    component_type: str = ""
    summary: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Resolution:
    status: Status
    rule: str
    expression: str
    mpns: tuple[str, ...]
    message: str

    @property
    def mpn(self) -> str | None:
        return self.mpns[0] if self.status == "resolved" else None


def normalize(text: str) -> str:
    """Lowercase, accents folded, punctuation to spaces (keeping '#' for "#3")."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    folded = folded.lower().replace("\u2019", "'").replace("'s", "")
    return " ".join(re.sub(r"[^a-z0-9#.]+", " ", folded).replace(". ", " ").split()).strip(".")


def tokens(text: str) -> list[str]:
    return [t for t in re.split(r"[^a-z0-9]+", normalize(text)) if t]


def number_of(value: Any) -> Decimal | None:
    """A number from 899, "899.00", "$1,299", "15.6 inch", "1.8 kg"; None if none."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float, Decimal)):
        try:
            return Decimal(str(value))
        except InvalidOperation:
            return None
    if isinstance(value, str):
        match = NUMBER_RE.search(value)
        if match:
            try:
                return Decimal(match.group().replace(",", ""))
            except InvalidOperation:
                return None
    if isinstance(value, Mapping):  # {"amount": 899, "currency": "USD"}
        for key in ("amount", "value"):
            if key in value:
                return number_of(value[key])
    return None


def _key_matches(key: str, names: Iterable[str]) -> bool:
    normal = re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")
    return any(normal == name or normal.startswith(name + "_") for name in names)


def attribute_value(data: Mapping[str, Any], attribute: str) -> Decimal | None:
    """The item's numeric value of `attribute` from its data, looking one level deep
    ({"specs": {"weight_kg": 1.8}}) so that agents need not flatten their records."""
    names = ATTRIBUTE_KEYS.get(attribute, (attribute,))
    for key, value in data.items():
        if _key_matches(str(key), names):
            number = number_of(value)
            if number is not None:
                return number
    for value in data.values():
        if isinstance(value, Mapping):
            for key, inner in value.items():
                if _key_matches(str(key), names):
                    number = number_of(inner)
                    if number is not None:
                        return number
    return None


def item_vocabulary(item: Item) -> set[str]:
    """The words that can name an item: name, type, MPN and descriptive data fields."""
    words = set(tokens(item.name)) | set(tokens(item.component_type)) | set(tokens(item.mpn))
    for key, value in item.data.items():
        if isinstance(value, str) and _key_matches(str(key), NAME_KEYS):
            words |= set(tokens(value))
    return {w for w in words if w not in FILLER}


def similarity(query_token: str, item_token: str) -> float:
    if query_token == item_token:
        return 1.0
    if len(query_token) <= 2 or len(item_token) <= 2:
        return 0.0  # "hp", "15": only exact
    if query_token.isdigit() != item_token.isdigit():
        return 0.0
    if len(query_token) >= 4 and item_token.startswith(query_token):
        return 0.9  # "think" → "thinkpad", "spec" → "spectre"
    return SequenceMatcher(None, query_token, item_token).ratio()
