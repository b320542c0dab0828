# ruff: noqa: E501 - the rule table keeps each regex on one line, to be read as a table
"""The extractor's rules for the attributes that change: a new job, a budget stated or
updated. They are matched before the rules of `patterns` (same `Rule` shape, same
checks in `heuristic.value_ok`), and what they keep is what memory_app.subjects reads
as the attribute's value, so that the newer statement supersedes the older.
"""

from __future__ import annotations

import re

from memory_app.extraction.patterns import Rule
from memory_app.models import MemoryType

_F, _R = str(MemoryType.FACT.value), str(MemoryType.PROFILE.value)

# A budget, with what it is for: "my budget", "the trip budget", "our budget for the trip".
_BUDGET = r"(?:my|our|the)\s+(?P<what>(?:(?:whole|total|overall|entire|new|current|updated)\s+)?(?:[a-z]+\s+)??budget(?:\s+for\s+(?:the|this|my|our)\s+[a-z]+)?)"
_CHANGED_TO = r"(?:raised|increased|lowered|cut|changed|reduced|upped|bumped\s+up|set)"

_RULE_SPECS: tuple[tuple[str, str, str, str, str, tuple[str, ...], float, float], ...] = (
    # key, type, regex, summary, kind, tags, importance, confidence
    ("occupation", _R,
     r"(?:I|I've|I\s+have|I\s+just|I've\s+just)\s+(?:recently\s+)?(?:started|got|took|landed|accepted)\s+(?:a\s+|an\s+|my\s+)?(?:new\s+)?(?:job|position|role)\s+as\s+(?:a|an)\s+(?P<value>[\w-]+(?:\s+[\w-]+){0,3}?)(?:\s+(?:at|for|with)\s+(?P<employer>.+))?$",
     "User works as a {value}", "occupation", ("profile", "work"), 0.7, 0.85),
    ("budget", _F,
     _BUDGET + r"\s+(?:is|'s|(?:has\s+)?(?:went|gone|goes|moved)\s+(?:up|down)\s+to|(?:is|was|has\s+been)\s+" + _CHANGED_TO + r"\s+to)\s+(?:now\s+|actually\s+)?(?P<value>.+)",
     "User's {what} is {value}", "amount", ("fact", "budget"), 0.7, 0.85),
    ("budget", _F,
     r"(?:I|we)\s+(?:just\s+|have\s+|'ve\s+)?" + _CHANGED_TO + r"\s+" + _BUDGET + r"\s+to\s+(?P<value>.+)",
     "User's {what} is {value}", "amount", ("fact", "budget"), 0.7, 0.85),
)  # fmt: skip

ATTRIBUTE_RULES: tuple[Rule, ...] = tuple(
    Rule(key, kind_type, re.compile(regex, re.IGNORECASE), summary, kind, tags, imp, conf)
    for key, kind_type, regex, summary, kind, tags, imp, conf in _RULE_SPECS
)
