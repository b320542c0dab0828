"""The words and patterns the resolution rules read: ordinals and cardinals, "last" and
"from the end", demonstratives, superlatives and comparatives with the attribute each
compares, the data keys that hold an attribute or a name, and the filler words that
never name an item."""

from __future__ import annotations

import re

# A query token counts as naming an item token at or above this similarity (difflib
# ratio): "lenvo"→"lenovo" is 0.91, "thinkpda"→"thinkpad" 0.88, "dell"→"hp" 0.
FUZZY_THRESHOLD = 0.8
# Items whose name score is within this of the best are tied (→ ambiguous).
TIE_MARGIN = 0.05
MAX_CANDIDATES = 10

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

NUMBER_RE = re.compile(r"-?\d+(?:[.,]\d+)*(?:\.\d+)?")
