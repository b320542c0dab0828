"""Cutting a memory's text into passages: its sentences, grouped in order until a group
holds PASSAGE_MIN_WORDS words (a short sentence joins the next; a short last one joins
the group before it). A text of fewer than PASSAGES_FROM_WORDS words, or one that makes a
single group, has no passages: its own vector already says it. At most
ENGRAM_MEMORY_MAX_PASSAGES, from the start (a turn's memory begins with what the user
said)."""

from __future__ import annotations

from django.conf import settings

from memory_app.window.text import split_sentences

PASSAGE_MIN_WORDS = 12
PASSAGES_FROM_WORDS = 25


def passage_texts(text: str) -> list[str]:
    """The passages of `text`, in order; [] when it has none of its own."""
    if len(text.split()) < PASSAGES_FROM_WORDS:
        return []
    groups: list[list[str]] = []
    current: list[str] = []
    words = 0
    for sentence in split_sentences(text):
        current.append(sentence)
        words += len(sentence.split())
        if words >= PASSAGE_MIN_WORDS:
            groups.append(current)
            current, words = [], 0
    if current:
        if groups and words < PASSAGE_MIN_WORDS // 2:
            groups[-1] += current
        else:
            groups.append(current)
    if len(groups) < 2:
        return []
    most = max(0, int(settings.ENGRAM_MEMORY_MAX_PASSAGES))
    return [" ".join(group) for group in groups[:most]]
