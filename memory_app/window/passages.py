"""The part of a long text that answers a query, for a context line of bounded size.

A recalled message may run to thousands of words while a context line holds a few
hundred tokens; its head is rarely where the answer is. The passage kept is the run of
sentences around the sentence sharing the most query words (weighted by how rare each
word is in the text's sentences), grown on both sides while it fits."""

from __future__ import annotations

import math
import re

from memory_app.window.text import split_sentences
from memory_app.window.tokens import count_tokens, truncate_to_tokens
from sessions_app.resolution.vocabulary import ORDINAL_WORDS

_WORD = re.compile(r"[a-z0-9]+")
# Words that say nothing about which sentence answers: a query's function words.
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "she",
        "he",
        "so",
        "that",
        "the",
        "their",
        "them",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)
ELLIPSIS = "…"
SPEAKER_SEPARATOR = " / "  # between two speakers' words in one line
# A list marker the sentence split leaves on its own: "5." / "5)" / "-" / "*".
_BARE_MARKER = re.compile(r"(?:\d{1,2}[.)]|[-*•])")
# "the fifth bottle", "the 3rd option": a place in a list, not "the first time".
_ORDINAL = re.compile(
    r"\bthe\s+(?P<ordinal>"
    + "|".join(sorted(ORDINAL_WORDS, key=len, reverse=True))
    + r"|\d{1,2}(?:st|nd|rd|th))\s+(?!time\b|place\b)[a-z]",
)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def _sentences(text: str) -> list[str]:
    """The text's sentences, a bare list marker joined to the item it starts."""
    out: list[str] = []
    for sentence in split_sentences(text):
        if out and _BARE_MARKER.fullmatch(out[-1]):
            out[-1] = f"{out[-1]} {sentence}"
        else:
            out.append(sentence)
    return out


def _list_position(query: str) -> int | None:
    match = _ORDINAL.search(query.lower())
    if match is None:
        return None
    word = match.group("ordinal")
    return ORDINAL_WORDS.get(word) or int(re.sub(r"\D", "", word))


def _scores(sentences: list[str], query: str) -> list[float]:
    """Each sentence's query words weighted by rarity; the list item the query points
    at, if any, above them all."""
    wanted = _words(query)
    sets = [_words(sentence) for sentence in sentences]
    df = {w: sum(w in s for s in sets) for w in wanted}
    idf = {w: math.log(1 + len(sets) / df[w]) for w in wanted if df[w]}
    scores = [sum(idf.get(w, 0.0) for w in s & wanted) for s in sets]
    position = _list_position(query)
    if position is not None:
        item = re.compile(rf"\W*{position}[.)]\s")
        top = max(scores, default=0.0) + 1.0
        for i, sentence in enumerate(sentences):
            if item.match(sentence):
                scores[i] = top
                break
    return scores


def _span(sentences: list[str], query: str, max_tokens: int) -> tuple[int, int]:
    """The first and last index of the run of `sentences` around the one that best
    matches `query`, grown on both sides while it fits `max_tokens`."""
    scores = _scores(sentences, query)
    best = max(range(len(sentences)), key=lambda i: (scores[i], -i))
    low = high = best
    used = count_tokens(sentences[best])
    while True:
        grew = False
        for candidate in (high + 1, low - 1):
            if 0 <= candidate < len(sentences) and not low <= candidate <= high:
                cost = count_tokens(sentences[candidate]) + 1
                if used + cost <= max_tokens - 2:
                    used += cost
                    low, high = min(low, candidate), max(high, candidate)
                    grew = True
        if not grew:
            return low, high


def best_passage(text: str, query: str, max_tokens: int) -> str:
    """`text` whole when it fits in `max_tokens`; else the sentences around the one that
    best matches `query`, marked with an ellipsis where text was left out."""
    if count_tokens(text) <= max_tokens:
        return text
    sentences = _sentences(text)
    if len(sentences) <= 1:
        return truncate_to_tokens(text, max_tokens)
    low, high = _span(sentences, query, max_tokens)
    passage = truncate_to_tokens(" ".join(sentences[low : high + 1]), max_tokens - 2)
    return (ELLIPSIS if low > 0 else "") + passage + (ELLIPSIS if high < len(sentences) - 1 else "")


def speakers_passage(parts: list[tuple[str, str]], query: str, max_tokens: int) -> tuple[str, bool]:
    """The passage of a text several speakers said (`parts`: speaker and words, in
    order) that best answers `query`, chosen as `best_passage` chooses it, each
    speaker's words after their name (`user: … / assistant: …`, an ellipsis where words
    were left out); and whether it holds the whole text. A part without words is
    left out."""
    said = [(speaker, " ".join(text.split())) for speaker, text in parts if text.strip()]
    whole = SPEAKER_SEPARATOR.join(f"{speaker}: {text}" for speaker, text in said)
    if count_tokens(whole) <= max_tokens:
        return whole, True
    # (part, sentence of the part, the sentence)
    sentences = [
        (i, j, s) for i, (_, text) in enumerate(said) for j, s in enumerate(_sentences(text))
    ]
    labels = sum(count_tokens(f"{speaker}: {SPEAKER_SEPARATOR}") + 2 for speaker, _ in said)
    low, high = _span([s for _, _, s in sentences], query, max_tokens - labels)
    groups: list[tuple[int, list[tuple[int, str]]]] = []
    for part, index, sentence in sentences[low : high + 1]:
        if not groups or groups[-1][0] != part:
            groups.append((part, []))
        groups[-1][1].append((index, sentence))
    rendered = []
    for part, run in groups:
        last = sum(1 for p, _, _ in sentences if p == part) - 1
        words = " ".join(sentence for _, sentence in run)
        head = ELLIPSIS if run[0][0] > 0 else ""
        tail = ELLIPSIS if run[-1][0] < last else ""
        rendered.append(f"{said[part][0]}: {head}{words}{tail}")
    return truncate_to_tokens(SPEAKER_SEPARATOR.join(rendered), max_tokens), False
