"""Demo memories for the demo users, added through the real pipeline (embedded, deduped).
More come from the demo turns through extraction once turns are recorded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_app.models import MemoryScope, MemorySource, MemoryType
from memory_app.services.extraction import extract_heuristic
from memory_app.services.memories import AddResult, MemoryDraft, memory_add_many

if TYPE_CHECKING:
    from sessions_app.models import Tenant

DEMO_AGENT = "shop-assistant"
DEMO_USERS = ("alice", "bob")

_STATED = {
    "alice": [
        "Please keep it short.",
        "I'm allergic to latex.",
        "My budget is 1500 dollars for the new laptop.",
        "I live in Lisbon.",
    ],
    "bob": [
        "Call me Bobby.",
        "I work at Globex as a hardware engineer.",
        "I prefer AMD processors over Intel.",
    ],
}
_DIRECT = [
    MemoryDraft(
        user_id="alice",
        agent_id=DEMO_AGENT,
        type=MemoryType.EPISODIC,
        content="Ordered the Dell XPS 15 (XPS-9530), order number A-73812, on the first visit.",
        tags=["order", "laptop"],
        importance=0.6,
    ),
    MemoryDraft(
        user_id="bob",
        agent_id=DEMO_AGENT,
        type=MemoryType.PROFILE,
        content="Bob builds embedded boards and often orders STM32 microcontrollers.",
        tags=["profile", "work"],
        importance=0.7,
        source=MemorySource.IMPLICIT_INFERENCE,
        confidence=0.7,
    ),
    MemoryDraft(
        user_id="system",
        agent_id=DEMO_AGENT,
        type=MemoryType.POLICY,
        scope=MemoryScope.PUBLIC,
        content="Returns are accepted within 30 days with the original receipt.",
        tags=["policy", "returns"],
        importance=0.9,
        source=MemorySource.SYSTEM_GENERATED,
        pinned=True,
    ),
]


def demo_memories_load(*, tenant: Tenant) -> list[AddResult]:
    """A few memories per demo user: some as the heuristic extractor reads demo lines,
    some stated directly, and one public policy."""
    drafts: list[MemoryDraft] = []
    for user_id, lines in _STATED.items():
        for line in lines:
            for candidate in extract_heuristic(line):
                drafts.append(
                    MemoryDraft(
                        user_id=user_id,
                        agent_id=DEMO_AGENT,
                        type=candidate.type,
                        content=candidate.content,
                        summary=candidate.summary,
                        structured=candidate.structured,
                        tags=candidate.tags,
                        importance=candidate.importance,
                        confidence=candidate.confidence,
                        source=MemorySource.HEURISTIC_EXTRACTION,
                    )
                )
    return memory_add_many(tenant=tenant, drafts=[*drafts, *_DIRECT])
