"""Celery tasks: thin, idempotent, one service each; they take ids."""

from __future__ import annotations

import uuid
from typing import Any

from celery import shared_task

from config.celery_app import TASK_DEFAULTS
from memory_app.lexicon.fold import lexicon_fold
from memory_app.services.access import memory_access_flush
from memory_app.services.decay import memories_decay
from memory_app.services.episodes import session_episode_write
from memory_app.services.extraction import (
    memories_extract_from_span,
    memories_extract_from_turn,
    memories_extract_from_turns,
)
from memory_app.services.turn_queue import (
    remember_and_extract,
    remember_turn_and_extract,
    turns_remember_pending,
)


@shared_task(name="memory_app.extract_memories_from_turn", **TASK_DEFAULTS)
def extract_memories_from_turn(turn_id: int) -> dict[str, Any]:
    """Safe to re-run: the add pipeline turns a second run into duplicates."""
    results = memories_extract_from_turn(turn_id=turn_id)
    return {"turn_id": turn_id, "actions": [result.action for result in results]}


@shared_task(name="memory_app.extract_memories_from_turns", **TASK_DEFAULTS)
def extract_memories_from_turns(turn_ids: list[int]) -> dict[str, Any]:
    """Safe to re-run: the add pipeline turns a second run into duplicates."""
    results = memories_extract_from_turns(turn_ids=turn_ids)
    return {"turns": len(turn_ids), "actions": [result.action for result in results]}


@shared_task(name="memory_app.decay_memories", **TASK_DEFAULTS)
def decay_memories() -> dict[str, int]:
    report = memories_decay()
    return {"scored": report.scored, "deleted": report.deleted, "batches": report.batches}


@shared_task(name="memory_app.extract_memories_from_span", **TASK_DEFAULTS)
def extract_memories_from_span(summary_id: int) -> dict[str, Any]:
    """Safe to re-run: the same summary text answers `duplicate`."""
    results = memories_extract_from_span(summary_id=summary_id)
    return {"summary_id": summary_id, "actions": [result.action for result in results]}


@shared_task(name="memory_app.remember_turn", **TASK_DEFAULTS)
def remember_turn(turn_id: int) -> dict[str, Any]:
    """Safe to re-run: a turn already remembered is not written again."""
    return {"turn_id": turn_id, "written": remember_turn_and_extract(turn_id=turn_id)}


@shared_task(name="memory_app.remember_session_turns", **TASK_DEFAULTS)
def remember_session_turns(session_id: str, up_to: int) -> dict[str, Any]:
    """Safe to re-run: turns already remembered are skipped, the rest written once (and
    handed to extraction)."""
    written = remember_and_extract(marks={uuid.UUID(session_id): up_to})
    return {"session_id": session_id, "up_to": up_to, "written": written}


@shared_task(name="memory_app.remember_pending_turns", **TASK_DEFAULTS)
def remember_pending_turns() -> dict[str, int]:
    """Safe to re-run and to overlap: one drain runs at a time, the others return."""
    report = turns_remember_pending()
    return {"written": report.written, "marks": report.marks, "left": report.left}


@shared_task(name="memory_app.write_session_episode", **TASK_DEFAULTS)
def write_session_episode(session_id: str) -> dict[str, Any]:
    """Safe to re-run: an episode already up to date is left as it is."""
    return {"session_id": session_id, "episode": session_episode_write(session_id=session_id)}


@shared_task(name="memory_app.flush_memory_access", **TASK_DEFAULTS)
def flush_memory_access() -> dict[str, int]:
    """Safe to re-run and to overlap: each run claims what the buffer holds by RENAME."""
    report = memory_access_flush()
    return {"buffers": report.buffers, "memories": report.memories, "reads": report.reads}


@shared_task(name="memory_app.fold_lexicon_stats", **TASK_DEFAULTS)
def fold_lexicon_stats() -> dict[str, int]:
    """Safe to re-run and to overlap: each run takes the rows no other holds."""
    report = lexicon_fold()
    return {
        "term_rows": report.term_rows,
        "lexicon_rows": report.lexicon_rows,
        "batches": report.batches,
    }
