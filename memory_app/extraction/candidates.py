"""What an extractor proposes: a memory to be, before the add pipeline judges it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass
class Candidate:
    type: str
    content: str
    summary: str = ""
    tags: list[str] = field(default_factory=list)
    structured: dict[str, Any] = field(default_factory=dict)
    importance: float = 0.5
    confidence: float = 0.8
    # When what it says happened or holds from, when the text says so ("last May");
    # None: the time of the turn it was read from.
    occurred_at: datetime | None = None
