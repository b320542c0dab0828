"""Serving the context for an agent's next LLM call: the assembly is a read
(`memory_app.selectors.context`); what it writes is the access statistics of the
long-term memories that went into it, as a search does for the hits it returns."""

from __future__ import annotations

import uuid
from typing import Any

from memory_app.metrics import context_observe
from memory_app.selectors.context import AssembledContext, context_assemble
from memory_app.services.memories import memory_record_access

MEMORY_KEY_PREFIX = "memory:"


def context_serve(**assemble_args: Any) -> AssembledContext:
    """`context_assemble(**assemble_args)`, then count the included memories as read
    (and the context's size under its policy, for comparing policies)."""
    context = context_assemble(**assemble_args)
    context_observe(policy=str(context.policy["name"]), total_tokens=context.total_tokens)
    memory_record_access(
        memory_ids=[
            uuid.UUID(item["key"].removeprefix(MEMORY_KEY_PREFIX))
            for item in context.included
            if item["key"].startswith(MEMORY_KEY_PREFIX)
        ]
    )
    return context
