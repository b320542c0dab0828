"""Reference resolution: which item does "the first one", "it" or "the Dell" mean?

Pure code, no database: it takes the session's fetched items, the order of the last
results and the focus, and answers a `Resolution`. Keeping it pure makes it cheap to
test with hundreds of phrasings and lets other callers (context assembly, an agent-side
SDK) reuse it. `sessions_app.services.resolution` wraps it for a stored session.

The referring expression is found inside a whole utterance ("Tell me about the first
one!", "add the Dell to my list"), so rules look for their own patterns and ignore the
words around them. The rules, in the order they are tried (the first that applies wins):

1. `mpn`: the utterance contains an item's MPN verbatim.
2. `ordinal_from_end`: "second to last", "penultimate", "third from the end".
3. `ordinal`: "first", "2nd", "#3", "number four", "item 5", "top one"; also "last".
   Positions count in the last results; with a name ("the second Dell") they count
   among the last results that match the name.
0. `comparative`: "cheaper than the Dell", "a bigger one", "a lighter HP": relative to
   the item after "than" (resolved by these same rules) or else to the focus; the
   closest item beyond it wins.
4. `superlative`: "the cheapest", "the lightest", "the biggest screen" over numeric
   data fields (price, weight, screen…), among the last results (or all items if no
   results are stored), narrowed by a name if one is given ("the cheapest Dell").
5. `name`: brands, models and fragments matched fuzzily (misspellings tolerated) against
   the item's name, type, MPN and descriptive data fields.
6. `focus`: pronouns and demonstratives ("it", "this", "that one", "this laptop").

Several equally good items → `ambiguous`; nothing → `unresolved`; both with candidates.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from difflib import SequenceMatcher
from typing import Any, Literal

Status = Literal["resolved", "ambiguous", "unresolved"]

# A query token counts as naming an item token at or above this similarity (difflib
# ratio): "lenvo"→"lenovo" is 0.91, "thinkpda"→"thinkpad" 0.88, "dell"→"hp" 0.
FUZZY_THRESHOLD = 0.8
# Items whose name score is within this of the best are tied (→ ambiguous).
TIE_MARGIN = 0.05
MAX_CANDIDATES = 10


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


# --- vocabulary ------------------------------------------------------------------------

ORDINAL_WORDS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
    "eleventh": 11,
    "twelfth": 12,
    "thirteenth": 13,
    "fourteenth": 14,
    "fifteenth": 15,
    "sixteenth": 16,
    "seventeenth": 17,
    "eighteenth": 18,
    "nineteenth": 19,
    "twentieth": 20,
}
CARDINAL_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
}
# Nouns after which a cardinal is a position: "item 5", "option two", "number four".
POSITION_NOUNS = r"(?:number|no|num|item|option|result|choice|product|entry)"

_ORDINAL_WORD_RE = "|".join(sorted(ORDINAL_WORDS, key=len, reverse=True))
_CARDINAL_WORD_RE = "|".join(sorted(CARDINAL_WORDS, key=len, reverse=True))

FROM_END_RE = re.compile(
    rf"\b(?:(?P<word>{_ORDINAL_WORD_RE})|(?P<digits>\d{{1,3}})(?:st|nd|rd|th))"
    r"\s+(?:one\s+|item\s+|result\s+)?(?:to|from)\s+(?:the\s+)?(?:last|end|bottom)\b"
    r"|\b(?P<penult>penultimate|next\s+to\s+(?:the\s+)?last|last\s+but\s+one"
    r"|one\s+before\s+(?:the\s+)?last)\b"
    r"|\b(?P<antepenult>antepenultimate)\b"
)
ORDINAL_RE = re.compile(
    rf"\b(?P<word>{_ORDINAL_WORD_RE})\b"
    r"|\b(?P<suffixed>\d{1,3})(?:st|nd|rd|th)\b"
    r"|#\s*(?P<hash>\d{1,3})\b"
    rf"|\b{POSITION_NOUNS}\.?\s*#?\s*(?:(?P<noun_digits>\d{{1,3}})\b|(?P<noun_word>{_CARDINAL_WORD_RE})\b)"
    r"|\b(?P<top>top)\s+(?:one|item|result|pick|choice|option)\b"
)
LAST_RE = re.compile(
    r"(?<!\bat )\b(?P<last>last|final|bottom)\b(?!\s+(?:time|week|year|month|night))"
)

DEMONSTRATIVE_RE = re.compile(r"\b(?:it|this|that|the\s+same|same\s+one|the\s+one)\b")

# Superlatives: phrase → (attribute, "min" | "max"). Longer phrases are tried first.
SUPERLATIVES: dict[str, tuple[str, str]] = {
    "cheapest": ("price", "min"),
    "least expensive": ("price", "min"),
    "lowest price": ("price", "min"),
    "lowest priced": ("price", "min"),
    "lowest cost": ("price", "min"),
    "least costly": ("price", "min"),
    "most affordable": ("price", "min"),
    "most expensive": ("price", "max"),
    "priciest": ("price", "max"),
    "costliest": ("price", "max"),
    "dearest": ("price", "max"),
    "highest price": ("price", "max"),
    "highest priced": ("price", "max"),
    "lightest": ("weight", "min"),
    "least heavy": ("weight", "min"),
    "heaviest": ("weight", "max"),
    "biggest screen": ("screen", "max"),
    "largest screen": ("screen", "max"),
    "biggest display": ("screen", "max"),
    "largest display": ("screen", "max"),
    "widest screen": ("screen", "max"),
    "biggest": ("screen", "max"),
    "largest": ("screen", "max"),
    "smallest screen": ("screen", "min"),
    "smallest display": ("screen", "min"),
    "smallest": ("screen", "min"),
    "most ram": ("ram", "max"),
    "most memory": ("ram", "max"),
    "least ram": ("ram", "min"),
    "most storage": ("storage", "max"),
    "biggest ssd": ("storage", "max"),
    "longest battery": ("battery", "max"),
    "best battery": ("battery", "max"),
    "highest rated": ("rating", "max"),
    "best rated": ("rating", "max"),
    "top rated": ("rating", "max"),
    "lowest rated": ("rating", "min"),
    "worst rated": ("rating", "min"),
}
SUPERLATIVE_RE = re.compile(
    r"\b(?P<phrase>"
    + "|".join(
        re.escape(p).replace(r"\ ", r"[\s-]+") for p in sorted(SUPERLATIVES, key=len, reverse=True)
    )
    + r")\b"
)
# Comparatives: phrase → (attribute, "lt" | "gt"), relative to a reference item: the one
# after "than" ("cheaper than the Dell"), else the item in focus ("a bigger one").
COMPARATIVES: dict[str, tuple[str, str]] = {
    "cheaper": ("price", "lt"),
    "less expensive": ("price", "lt"),
    "lower priced": ("price", "lt"),
    "more affordable": ("price", "lt"),
    "more expensive": ("price", "gt"),
    "pricier": ("price", "gt"),
    "costlier": ("price", "gt"),
    "lighter": ("weight", "lt"),
    "heavier": ("weight", "gt"),
    "bigger": ("screen", "gt"),
    "larger": ("screen", "gt"),
    "smaller": ("screen", "lt"),
    "more ram": ("ram", "gt"),
    "more memory": ("ram", "gt"),
    "more storage": ("storage", "gt"),
    "longer battery": ("battery", "gt"),
    "better rated": ("rating", "gt"),
}
COMPARATIVE_RE = re.compile(
    r"\b(?P<phrase>"
    + "|".join(
        re.escape(p).replace(r"\ ", r"[\s-]+") for p in sorted(COMPARATIVES, key=len, reverse=True)
    )
    + r")\b(?:[^.?!,;]*?\bthan\s+(?P<ref>[^.?!,;]+))?"
)
# Data keys that hold each attribute. A key matches if, normalised, it equals one of
# these or starts with one followed by "_" ("price_usd", "weight_kg", "screen_inches").
ATTRIBUTE_KEYS: dict[str, tuple[str, ...]] = {
    "price": ("price", "cost", "amount", "msrp", "list_price", "unit_price", "sale_price"),
    "weight": ("weight", "mass"),
    "screen": ("screen", "screen_size", "display", "display_size", "diagonal"),
    "ram": ("ram", "memory"),
    "storage": ("storage", "ssd", "disk", "hdd"),
    "battery": ("battery", "battery_life"),
    "rating": ("rating", "stars", "review_score", "score"),
}
# Data fields whose text describes the item (brand, model…) and so can name it.
NAME_KEYS = ("brand", "manufacturer", "make", "model", "series", "family", "line", "title")

# Words that never name an item: verbs and glue of requests around the reference.
_FILLER_WORDS = """
    a an the and or but too also as well please pls plz thanks thank you ok okay so then
    now just really actually maybe perhaps hmm um uh oh yes yeah yep no nope hey hi
    i me my mine we us our you your he she they them their it its this that these those
    is are was were be been being am do does did done have has had can could would should
    will shall may might must want wanted need like love prefer pick choose take get buy
    order purchase add put save keep remove delete drop take out tell show give let see
    compare describe explain about more info information details detail spec specs of
    for to from in on at with without by into onto into up down over under than what which
    who whom whose how why where when one ones item items product products thing things
    option options choice choices result results entry model models list cart basket
    wishlist selection selections same former latter other another some any all there
    here go going look looking looked check again instead rather number no much many
    price prices cost costs cheap cheaper expensive screen display weight size battery
    ram memory storage inch inches kg lbs review reviews rating ratings think guess
    """
FILLER = frozenset(_FILLER_WORDS.split())

_NUMBER_RE = re.compile(r"-?\d+(?:[.,]\d+)*(?:\.\d+)?")


# --- helpers ---------------------------------------------------------------------------


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
        match = _NUMBER_RE.search(value)
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


# --- the resolver ----------------------------------------------------------------------


@dataclass
class _Context:
    items: dict[str, Item]
    last: list[str]  # last results, mpns in order, only those still known
    focus: str | None
    text: str

    def candidates(self) -> tuple[str, ...]:
        pool = self.last or list(self.items)
        return tuple(pool[:MAX_CANDIDATES])


def resolve_reference(
    utterance: str,
    *,
    items: Sequence[Item],
    last_results: Sequence[str] = (),
    focus_mpn: str | None = None,
) -> Resolution:
    """Resolve the referring expression inside `utterance`; see the module docstring."""
    by_mpn = {item.mpn: item for item in items}
    ctx = _Context(
        items=by_mpn,
        last=[mpn for mpn in last_results if mpn in by_mpn],
        focus=focus_mpn if focus_mpn in by_mpn else None,
        text=normalize(utterance),
    )
    if not ctx.text:
        return _unresolved(ctx, "none", "", "The reference is empty.")
    rules = (
        _by_comparative,
        _by_mpn,
        _by_ordinal_from_end,
        _by_ordinal,
        _by_superlative,
        _by_name,
    )
    for rule in rules:
        found = rule(ctx)
        if found is not None:
            return found
    return _unresolved(ctx, "none", ctx.text, "Nothing in the session matches this reference.")


def _resolved(rule: str, expression: str, mpn: str, message: str) -> Resolution:
    return Resolution("resolved", rule, expression, (mpn,), message)


def _unresolved(ctx: _Context, rule: str, expression: str, message: str) -> Resolution:
    return Resolution("unresolved", rule, expression, ctx.candidates(), message)


def _ambiguous(rule: str, expression: str, mpns: Sequence[str], message: str) -> Resolution:
    return Resolution("ambiguous", rule, expression, tuple(mpns[:MAX_CANDIDATES]), message)


def _by_mpn(ctx: _Context) -> Resolution | None:
    hits = [
        mpn
        for mpn in ctx.items
        if len(mpn) >= 3
        and re.search(rf"(?<![a-z0-9]){re.escape(normalize(mpn))}(?![a-z0-9])", ctx.text)
    ]
    if len(hits) == 1:
        return _resolved("mpn", hits[0], hits[0], "The MPN was named.")
    if len(hits) > 1:
        return _ambiguous("mpn", ", ".join(hits), hits, "Several MPNs were named.")
    return None


def _ordinal_in(
    ctx: _Context, rule: str, expression: str, position: int, from_end: bool
) -> Resolution:
    """Position `position` (1-based) of the last results, narrowed by any name given."""
    pool = ctx.last
    scope = "the last results"
    named = _name_matches(ctx, ctx.text.replace(expression, " "), pool)
    if named is not None and named[0]:
        pool = [mpn for mpn in ctx.last if mpn in named[0]]
        scope = "the last results that match the name"
    if not pool:
        return _unresolved(ctx, rule, expression, "There are no results to count in.")
    index = len(pool) - position if from_end else position - 1
    if not 0 <= index < len(pool):
        return _unresolved(
            ctx, rule, expression, f"There is no item {position} in {scope} ({len(pool)} items)."
        )
    where = f"{position} from the end" if from_end else f"{position}"
    return _resolved(rule, expression, pool[index], f"Item {where} of {scope}.")


def _by_ordinal_from_end(ctx: _Context) -> Resolution | None:
    match = FROM_END_RE.search(ctx.text)
    if match is None:
        return None
    if match.group("penult"):
        position = 2
    elif match.group("antepenult"):
        position = 3
    elif match.group("word"):
        position = ORDINAL_WORDS[match.group("word")]
    else:
        position = int(match.group("digits"))
    return _ordinal_in(ctx, "ordinal_from_end", match.group(), position, from_end=True)


def _by_ordinal(ctx: _Context) -> Resolution | None:
    found: list[tuple[str, int, bool]] = []
    for match in ORDINAL_RE.finditer(ctx.text):
        if match.group("word"):
            value = ORDINAL_WORDS[match.group("word")]
        elif match.group("top"):
            value = 1
        elif match.group("noun_word"):
            value = CARDINAL_WORDS[match.group("noun_word")]
        else:
            digits = match.group("suffixed") or match.group("hash") or match.group("noun_digits")
            value = int(digits)
        found.append((match.group(), value, False))
    for match in LAST_RE.finditer(ctx.text):
        found.append((match.group(), 1, True))
    if not found and re.fullmatch(r"#?\s*\d{1,3}", ctx.text):
        found.append((ctx.text, int(ctx.text.lstrip("# ")), False))
    if not found:
        return None
    distinct = {(value, from_end) for _, value, from_end in found}
    if len(distinct) > 1:
        picks = []
        for expression, value, from_end in found:
            one = _ordinal_in(ctx, "ordinal", expression, value, from_end)
            if one.status == "resolved" and one.mpns[0] not in picks:
                picks.append(one.mpns[0])
        expressions = ", ".join(e for e, _, _ in found)
        return _ambiguous("ordinal", expressions, picks, "Several positions were named.")
    expression, value, from_end = found[0]
    return _ordinal_in(ctx, "last" if from_end else "ordinal", expression, value, from_end)


def _by_superlative(ctx: _Context) -> Resolution | None:
    match = SUPERLATIVE_RE.search(ctx.text)
    if match is None:
        return None
    phrase = re.sub(r"[\s-]+", " ", match.group("phrase"))
    attribute, direction = SUPERLATIVES[phrase]
    pool = ctx.last or list(ctx.items)
    named = _name_matches(ctx, ctx.text.replace(match.group(), " "), pool)
    if named is not None and named[0]:
        pool = [mpn for mpn in pool if mpn in named[0]]
    values = {
        mpn: value
        for mpn in pool
        if (value := attribute_value(ctx.items[mpn].data, attribute)) is not None
    }
    if not values:
        return _unresolved(
            ctx, "superlative", match.group(), f"No item here has a {attribute} to compare."
        )
    best = min(values.values()) if direction == "min" else max(values.values())
    winners = [mpn for mpn, value in values.items() if value == best]
    if len(winners) > 1:
        return _ambiguous(
            "superlative", match.group(), winners, f"Several items share the same {attribute}."
        )
    return _resolved(
        "superlative", match.group(), winners[0], f"The {direction} {attribute} ({best})."
    )


def _by_comparative(ctx: _Context) -> Resolution | None:
    """ "cheaper than the Dell", "a bigger one": among the last results (or all items),
    the items whose attribute is below/above the reference item's, narrowed by a name
    ("a cheaper HP"); the closest to the reference wins (the next step, not the extreme,
    which the superlatives answer). The reference after "than" is itself resolved by
    every rule; without one it is the item in focus."""
    match = COMPARATIVE_RE.search(ctx.text)
    if match is None:
        return None
    phrase = re.sub(r"[\s-]+", " ", match.group("phrase"))
    attribute, direction = COMPARATIVES[phrase]
    expression = match.group().strip()
    ref_text = (match.group("ref") or "").strip()
    if ref_text:
        ref = resolve_reference(
            ref_text, items=list(ctx.items.values()), last_results=ctx.last, focus_mpn=ctx.focus
        )
        if ref.status != "resolved":
            return Resolution(
                ref.status, "comparative", expression, ref.mpns, f"Than what? {ref.message}"
            )
        reference = ref.mpns[0]
    elif ctx.focus is not None:
        reference = ctx.focus
    else:
        return _unresolved(ctx, "comparative", expression, "Nothing is in focus to compare to.")
    base = attribute_value(ctx.items[reference].data, attribute)
    if base is None:
        return _unresolved(
            ctx, "comparative", expression, f"{reference} has no {attribute} to compare."
        )
    pool = [mpn for mpn in (ctx.last or list(ctx.items)) if mpn != reference]
    rest = ctx.text.replace(match.group(), " ")
    named = _name_matches(ctx, rest, pool)
    if named is not None and named[0] and named[1]:
        pool = [mpn for mpn in pool if mpn in named[0]]
    values = {
        mpn: value
        for mpn in pool
        if (value := attribute_value(ctx.items[mpn].data, attribute)) is not None
        and (value < base if direction == "lt" else value > base)
    }
    if not values:
        word = "lower" if direction == "lt" else "higher"
        return _unresolved(
            ctx, "comparative", expression, f"No item has a {word} {attribute} than {reference}."
        )
    closest = min(abs(value - base) for value in values.values())
    winners = [mpn for mpn, value in values.items() if abs(value - base) == closest]
    if len(winners) > 1:
        return _ambiguous(
            "comparative", expression, winners, f"Several items are equally {phrase}."
        )
    return _resolved(
        "comparative",
        expression,
        winners[0],
        f"{phrase.capitalize()} than {reference} ({attribute} {base}): the closest "
        f"({values[winners[0]]}).",
    )


def _name_matches(
    ctx: _Context, text: str, pool: Sequence[str]
) -> tuple[list[str], list[str], float] | None:
    """Items of `pool` best named by the content words of `text`: (tied best mpns, the
    words that matched, best score). None if no word names any item. Words that name
    every item alike ("laptop" among laptops) tell none apart: they count only when no
    other word matches, and then every item of the pool is tied."""
    if not pool:
        return None
    words = [w for w in tokens(text) if w not in FILLER and w not in ORDINAL_WORDS]
    # Joined neighbours catch split names: "zen book" → "zenbook", "think pad".
    words += [a + b for a, b in itertools.pairwise(words)]
    if not words:
        return None
    vocab = {mpn: item_vocabulary(ctx.items[mpn]) for mpn in pool}
    scores: dict[str, float] = dict.fromkeys(pool, 0.0)
    matched_words: list[str] = []
    alike_words: list[str] = []
    for word in words:
        per_item = {
            mpn: max((similarity(word, v) for v in vocab[mpn]), default=0.0) for mpn in pool
        }
        hits = {mpn: s for mpn, s in per_item.items() if s >= FUZZY_THRESHOLD}
        if not hits:
            continue
        if len(hits) == len(pool) and len(pool) > 1:
            alike_words.append(word)
            continue
        matched_words.append(word)
        for mpn, score in hits.items():
            scores[mpn] += score
    best = max(scores.values())
    if best <= 0:
        return (list(pool), alike_words, 0.0) if alike_words else None
    tied = [mpn for mpn in pool if scores[mpn] >= best - TIE_MARGIN]
    return tied, matched_words, best


def _by_name(ctx: _Context) -> Resolution | None:
    demonstrative = DEMONSTRATIVE_RE.search(ctx.text)
    pool = list(dict.fromkeys([*ctx.last, *ctx.items]))
    named = _name_matches(ctx, ctx.text, pool)
    if named is not None:
        tied, words, _ = named
        expression = " ".join(words)
        if demonstrative and ctx.focus in tied:
            return _resolved("focus", demonstrative.group(), ctx.focus, "The item in focus.")
        if len(tied) > 1:
            shown = [mpn for mpn in tied if mpn in ctx.last]
            if len(shown) == 1:
                return _resolved(
                    "name", expression, shown[0], "Best name match among the last results."
                )
            return _ambiguous("name", expression, tied, "Several items match this name.")
        return _resolved("name", expression, tied[0], "Best name match.")
    if demonstrative:
        if ctx.focus is None:
            return _unresolved(
                ctx, "focus", demonstrative.group(), "Nothing is in focus to refer to."
            )
        return _resolved("focus", demonstrative.group(), ctx.focus, "The item in focus.")
    return None
