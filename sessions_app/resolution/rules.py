"""The resolver: the rules tried in order on an utterance, the first that applies wins
(see the package docstring for the list)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from sessions_app.resolution.items import (
    Item,
    Resolution,
    attribute_value,
    item_vocabulary,
    normalize,
    similarity,
    tokens,
)
from sessions_app.resolution.vocabulary import (
    CARDINAL_WORDS,
    COMPARATIVE_RE,
    COMPARATIVES,
    DEMONSTRATIVE_RE,
    FILLER,
    FROM_END_RE,
    FUZZY_THRESHOLD,
    LAST_RE,
    MAX_CANDIDATES,
    ORDINAL_RE,
    ORDINAL_WORDS,
    SUPERLATIVE_RE,
    SUPERLATIVES,
    TIE_MARGIN,
)


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
    reference = _comparative_reference(ctx, (match.group("ref") or "").strip(), expression)
    if isinstance(reference, Resolution):
        return reference
    base = attribute_value(ctx.items[reference].data, attribute)
    if base is None:
        return _unresolved(
            ctx, "comparative", expression, f"{reference} has no {attribute} to compare."
        )
    pool = _comparative_pool(ctx, ctx.text.replace(match.group(), " "), reference)
    values = _beyond_base(ctx, pool, attribute, base, direction)
    if not values:
        word = "lower" if direction == "lt" else "higher"
        return _unresolved(
            ctx, "comparative", expression, f"No item has a {word} {attribute} than {reference}."
        )
    return _closest_to_base(expression, phrase, attribute, reference, base, values)


def _comparative_reference(ctx: _Context, ref_text: str, expression: str) -> str | Resolution:
    """The mpn a comparison is made against: `ref_text` (what follows "than") resolved by
    every rule, else the item in focus; the comparison's answer when there is none."""
    if ref_text:
        ref = resolve_reference(
            ref_text, items=list(ctx.items.values()), last_results=ctx.last, focus_mpn=ctx.focus
        )
        if ref.status != "resolved":
            return Resolution(
                ref.status, "comparative", expression, ref.mpns, f"Than what? {ref.message}"
            )
        return ref.mpns[0]
    if ctx.focus is not None:
        return ctx.focus
    return _unresolved(ctx, "comparative", expression, "Nothing is in focus to compare to.")


def _comparative_pool(ctx: _Context, rest: str, reference: str) -> list[str]:
    """The items compared with the reference: the last results (or all items) but the
    reference, narrowed to those a name in `rest` matches when a word told them apart."""
    pool = [mpn for mpn in (ctx.last or list(ctx.items)) if mpn != reference]
    named = _name_matches(ctx, rest, pool)
    if named is not None and named[0] and named[1]:
        pool = [mpn for mpn in pool if mpn in named[0]]
    return pool


def _beyond_base(
    ctx: _Context, pool: Sequence[str], attribute: str, base: Decimal, direction: str
) -> dict[str, Decimal]:
    """The items of `pool` whose `attribute` is below (`lt`) or above `base`, by mpn."""
    return {
        mpn: value
        for mpn in pool
        if (value := attribute_value(ctx.items[mpn].data, attribute)) is not None
        and (value < base if direction == "lt" else value > base)
    }


def _closest_to_base(
    expression: str,
    phrase: str,
    attribute: str,
    reference: str,
    base: Decimal,
    values: dict[str, Decimal],
) -> Resolution:
    """The item whose value is the next step from `base`; ambiguous on a tie."""
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
