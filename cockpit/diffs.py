"""Word-level diffs between memory versions, as HTML with <del> and <ins>."""

from __future__ import annotations

import difflib
import re

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

_TOKENS = re.compile(r"\s+|[^\s]+")


def word_diff(old: str, new: str) -> SafeString:
    """`new` with what was removed from `old` struck out and what was added marked."""
    before, after = _TOKENS.findall(old), _TOKENS.findall(new)
    pieces: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op in ("delete", "replace"):
            pieces.append(("del", "".join(before[a0:a1])))
        if op in ("insert", "replace"):
            pieces.append(("ins", "".join(after[b0:b1])))
        if op == "equal":
            pieces.append(("span", "".join(after[b0:b1])))
    return format_html_join("", "<{0}>{1}</{0}>", pieces) or format_html("")
