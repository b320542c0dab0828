"""Captured steps as chat-format JSONL (one fine-tuning example a line): the step's
prompt messages followed by its completion as the assistant's message, with where it
came from in `metadata`. Steps without a captured prompt or completion, and steps of
rolled-back turns, are skipped. Streamed in id order, a bounded page of rows at a time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import Q, QuerySet

from sessions_app.models import TurnStep

CHUNK = 500


def captured_steps(**filters: Any) -> QuerySet[TurnStep]:
    return (
        TurnStep.objects.filter(**filters, turn__rolled_back=False)
        .filter(Q(prompt__isnull=False) | ~Q(completion=""))
        .select_related("turn")
        .order_by("session_id", "turn__turn_number", "step_order")
    )


def step_example(step: TurnStep) -> dict[str, Any]:
    messages = [*(step.prompt or []), {"role": "assistant", "content": step.completion}]
    return {
        "messages": messages,
        "metadata": {
            "session_id": str(step.session_id),
            "turn_number": step.turn_number,
            "step_order": step.step_order,
            "step_type": step.step_type,
            "model": step.model,
            "success": step.success,
        },
    }


def steps_jsonl(steps: QuerySet[TurnStep]) -> Iterator[str]:
    """One JSON line per captured step (iterator(): rows are not all held at once)."""
    for step in steps.iterator(chunk_size=CHUNK):
        yield json.dumps(step_example(step), cls=DjangoJSONEncoder, ensure_ascii=False) + "\n"
