"""Turns waiting to become memories: a mark per turn in Valkey, drained in batches.

Recording a turn must stay cheap, and writing its memory costs an embedding and a few
statements; done turn by turn (a task per turn) the background work fell behind a steady
stream. So the `turn_recorded` hook only marks the turn: one Valkey round trip adds
`<session>:<number>` to a sorted set (scored by when) and sets the "drain due" flag if it
is not set; only the hook that set the flag publishes `memory_app.remember_pending_turns`.
While a drain is due or running, turns publish nothing.

The drain runs one at a time (a PostgreSQL advisory lock, freed with its connection if
the worker dies) and, in a worker, lingers a moment (ENGRAM_TURN_MEMORY_LINGER_SECONDS)
for new marks before it ends, so that a steady stream of turns is written by one
running drain rather than by a task queued behind the worker's others each time. It
takes the oldest marks, ENGRAM_TURN_MEMORY_BATCH at a time, and writes the memories of
the turns they name across all their sessions in batches of at most
ENGRAM_TURN_MEMORY_BATCH turns (one embedding call, one INSERT each; a mark may name
many turns: a `/turns/batch` marks each session's last one). The marks are removed only
after their turns committed, so a worker that dies mid-batch leaves them to the next
drain. While a batch is written, the batches after it are embedded in a thread: the
model's CPU and the database's overlap. Writing is idempotent (a turn's memory has a
content hash of its own), so a mark drained twice writes nothing the second time. The
turns of each batch are then handed to extraction in one task
(`extract_memories_from_turns`), which embeds their facts together too.

Nothing is lost to a missed publish: the periodic drain (config/schedules.py) takes
marks nobody drained, and the look-back of `conversation_remember_marked` writes, with a
session's next turn, its earlier turns whose mark was lost (a Valkey restart). When
Valkey does not take the mark, the hook publishes the per-session task instead (kept in
the outbox when the broker is down too) and skips Valkey for a few seconds.

The keys are named after the database, so that deployments (or test runs) sharing a
Valkey never drain one another's marks.
"""

from __future__ import annotations

import itertools
import logging
import time
import uuid
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import redis
from celery import current_app
from django.conf import settings
from django.db import connection

from config.database_errors import DATABASE_CONNECTION_ERRORS
from memory_app.services.conversation import (
    EmbeddedTurns,
    conversation_embed_turns,
    conversation_pending_turns,
    conversation_remember_marked,
    conversation_write_embedded,
)
from memory_app.services.extraction import extraction_may_find
from memory_app.valkey import valkey
from sessions_app.locks import advisory_lock
from sessions_app.selectors.turns import turn_get_by_id
from sessions_app.services.outbox import task_publish

if TYPE_CHECKING:
    from sessions_app.models import ChatTurn

logger = logging.getLogger(__name__)

DRAIN_LOCK = "memory.turn-queue.drain"
LINGER_POLL_SECONDS = 0.1  # how often a lingering drain looks for new marks
EMBEDDED_AHEAD = 2  # batches embedded beyond the one being written
RETRY_LATER_MS = 60_000  # a batch that failed is tried again after this, session by session
_valkey_down_until = 0.0  # monotonic; after a failed mark, skip Valkey until then


@dataclass
class DrainReport:
    written: int = 0  # memories written
    marks: int = 0  # marks taken off the queue
    batches: int = 0
    left: int = 0  # marks still waiting when the run ended


def _key(name: str) -> str:
    return f"engram:{connection.settings_dict['NAME']}:memory:turn-queue:{name}"


@dataclass(frozen=True)
class Marked:
    """What marking turns answered: whether Valkey took the marks, and whether the key
    the caller asked about in the same round trip exists (False when not asked, or when
    Valkey was not reached)."""

    taken: bool
    key_exists: bool = False


def turns_mark_pending(*, marks: Sequence[tuple[Any, int]]) -> bool:
    """Mark (session, turn number) pairs as waiting to become memories, and publish a
    drain unless one is due already. False when Valkey did not take them (down, stalled,
    or failed moments ago): the caller then publishes the work itself."""
    return turns_mark(marks=marks).taken


def turns_mark(*, marks: Sequence[tuple[Any, int]], exists: str | None = None) -> Marked:
    """`turns_mark_pending`, also asking in the same round trip whether the key `exists`
    is set (the `turn_recorded` hook asks whether the session's compaction is queued, so
    that one message serves both)."""
    global _valkey_down_until
    if not marks or time.monotonic() < _valkey_down_until:
        return Marked(taken=False)
    now_ms = int(time.time() * 1000)
    try:
        pipe = valkey().pipeline(transaction=False)
        pipe.zadd(_key("pending"), {f"{session}:{number}": now_ms for session, number in marks})
        pipe.set(_key("due"), 1, nx=True, px=settings.ENGRAM_TURN_MEMORY_DUE_MS)
        if exists is not None:
            pipe.exists(exists)
        _, due_now, *found = pipe.execute()
    except redis.RedisError as exc:
        _valkey_down_until = time.monotonic() + settings.ENGRAM_PUBLISH_BACKOFF_SECONDS
        logger.warning("could not mark turns as pending memories (%s)", exc)
        return Marked(taken=False)
    if due_now:
        from memory_app.tasks import remember_pending_turns

        task_publish(remember_pending_turns)
    return Marked(taken=True, key_exists=bool(found and found[0]))


def turns_remember_pending(
    *, batch: int | None = None, max_seconds: float | None = None
) -> DrainReport:
    """Drain the marks: batches of the oldest until none has come for the linger time
    or the run's time is up (a new run is then published). Returns at once when another
    drain holds the lock: that one takes whatever is marked before it ends."""
    batch = batch or settings.ENGRAM_TURN_MEMORY_BATCH
    deadline = time.monotonic() + (max_seconds or settings.ENGRAM_TURN_MEMORY_DRAIN_SECONDS)
    report = DrainReport()
    client = valkey()
    while True:
        with advisory_lock(DRAIN_LOCK) as mine:
            if not mine:
                return report
            _drain_while_marked(client, batch, deadline, report)
        # After the lock is let go: a turn marked from here on finds no drain due and
        # publishes one; a turn marked before is seen by the count below.
        client.delete(_key("due"))
        report.left = int(client.zcard(_key("pending")))
        if not report.left:
            return report
        if time.monotonic() >= deadline:
            from memory_app.tasks import remember_pending_turns

            task_publish(remember_pending_turns)
            return report


@dataclass
class _Take:
    """Marks taken off the queue's head and the turns they name, oldest recorded first
    (`turns` is None when reading them failed: they are written one session at a time
    instead). A mark names its session's turns up to it, so a take of a few marks may
    hold many turns (a `/turns/batch` marks only each session's last turn)."""

    members: list[Any]
    marks: list[tuple[Any, uuid.UUID, int]]
    turns: list[ChatTurn] | None
    settled: bool = False  # written one session at a time after a failed batch

    def keys(self) -> set[tuple[uuid.UUID, int]]:
        return {(turn.session_id, turn.turn_number) for turn in self.turns or ()}


@dataclass
class _Batch:
    """Up to a batch of a take's turns; `embedded` once its embedding is started (never
    when the take's turns could not be read). The take's marks go once its last batch
    is written."""

    take: _Take
    turns: list[ChatTurn]
    last: bool
    embedded: Future[EmbeddedTurns] | None = None


def _drain_while_marked(
    client: redis.Redis, batch: int, deadline: float, report: DrainReport
) -> None:
    """Drain batches; when none is due, wait for new marks up to the linger time (a
    steady stream of turns keeps one drain running instead of queueing a task behind
    the worker's others every time). Inline (eager mode, a request), never wait. While
    it runs the drain keeps the due flag set, so that hooks publish nothing.

    Pipelined: a take's turns are cut into batches of at most `batch` turns; while one
    is written, the EMBEDDED_AHEAD after it are embedded in a thread (the model's CPU
    and the database's overlap). The next take is read when its predecessor's last
    batch is written."""
    linger = (
        0.0 if current_app.conf.task_always_eager else settings.ENGRAM_TURN_MEMORY_LINGER_SECONDS
    )
    idle_since = time.monotonic()
    with ThreadPoolExecutor(1, "turn-memory-embedding") as embedding:
        queued: deque[_Batch] = deque()
        while time.monotonic() < deadline:
            client.set(_key("due"), 1, px=settings.ENGRAM_TURN_MEMORY_DUE_MS)
            if not queued:
                queued.extend(_take(client, batch, 0, set()))
            if queued:
                current = queued.popleft()
                if current.last:
                    # A settled take's marks are off the queue already.
                    taken = current.take
                    offset = 0 if taken.settled else len(taken.members)
                    queued.extend(_take(client, batch, offset, taken.keys()))
                _embed_ahead([current, *itertools.islice(queued, EMBEDDED_AHEAD)], embedding)
                _write_batch(client, current, report)
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since >= linger:
                return
            else:
                time.sleep(LINGER_POLL_SECONDS)


def _embed_ahead(batches: Sequence[_Batch], embedding: ThreadPoolExecutor) -> None:
    for ahead in batches:
        if ahead.embedded is None and ahead.take.turns is not None and not ahead.take.settled:
            ahead.embedded = embedding.submit(conversation_embed_turns, ahead.turns)


def _take(
    client: redis.Redis, batch: int, offset: int, skip: set[tuple[uuid.UUID, int]]
) -> list[_Batch]:
    """The oldest due marks (at most `batch`) after the first `offset` (those of the take
    being written), their pending turns but those in `skip`, oldest recorded first, in
    batches of at most `batch` turns; none when no mark is due."""
    due_by = int(time.time() * 1000)
    members: list[Any] = client.zrangebyscore(
        _key("pending"), "-inf", due_by, start=offset, num=batch
    )
    if not members:
        return []
    marks = _parse(members)
    try:
        turns = conversation_pending_turns(marks=_latest(marks), skip=skip)
    except DATABASE_CONNECTION_ERRORS:
        raise  # the task is retried; the marks stay
    except Exception:
        logger.exception("reading %s marked turns failed", len(marks))
        return [_Batch(_Take(members, marks, None), [], last=True)]
    turns.sort(key=lambda turn: turn.pk)
    take = _Take(members, marks, turns)
    starts = range(0, len(turns), batch) or range(1)  # a take with no turns still ends
    return [
        _Batch(take, turns[start : start + batch], last=start == starts[-1]) for start in starts
    ]


def _write_batch(client: redis.Redis, current: _Batch, report: DrainReport) -> None:
    """Write the memories of a batch, then, after its take's last batch, remove the
    take's marks; after a failure, the take's sessions one by one (`_one_by_one`), and
    its batches still queued are dropped (that wrote their turns)."""
    taken = current.take
    if taken.settled:
        return
    try:
        if current.embedded is None:
            raise RuntimeError("the batch's turns could not be read")
        written = conversation_write_embedded(current.embedded.result())
        _publish_extraction(written)
        report.written += len(written)
        report.batches += 1
    except DATABASE_CONNECTION_ERRORS:
        raise  # the task is retried; the marks stay
    except Exception:
        logger.exception(
            "writing %s marked turns failed; retrying session by session", len(taken.marks)
        )
        written_one_by_one, kept = _one_by_one(client, taken.marks)
        report.written += written_one_by_one
        report.batches += 1
        taken.settled = True
        _unmark(client, taken, kept, report)
    else:
        if current.last:
            _unmark(client, taken, set(), report)


def _unmark(client: redis.Redis, taken: _Take, kept: set[Any], report: DrainReport) -> None:
    done = [member for member in taken.members if member not in kept]
    if done:
        client.zrem(_key("pending"), *done)
    report.marks += len(done)


def _parse(members: Sequence[bytes | str]) -> list[tuple[bytes | str, uuid.UUID, int]]:
    marks = []
    for member in members:
        text = member.decode() if isinstance(member, bytes) else member
        session, _, number = text.rpartition(":")
        try:
            marks.append((member, uuid.UUID(session), int(number)))
        except ValueError:
            logger.warning("dropping a malformed pending-turn mark %r", text)
    return marks


def _latest(marks: Sequence[tuple[Any, uuid.UUID, int]]) -> dict[uuid.UUID, int]:
    """Each session's highest marked turn: the look-back covers the ones before it."""
    latest: dict[uuid.UUID, int] = {}
    for _, session, number in marks:
        latest[session] = max(number, latest.get(session, 0))
    return latest


def _one_by_one(
    client: redis.Redis, marks: Sequence[tuple[Any, uuid.UUID, int]]
) -> tuple[int, set[Any]]:
    """After a failed batch: each session alone, so that one bad session holds up no
    other. The marks of a session that fails again are put back, due later; returns the
    memories written and the marks put back."""
    written = 0
    kept: set[Any] = set()
    retry_at = int(time.time() * 1000) + RETRY_LATER_MS
    for session, number in _latest(marks).items():
        try:
            written += remember_and_extract(marks={session: number})
        except DATABASE_CONNECTION_ERRORS:
            raise
        except Exception:
            logger.exception("writing the marked turns of session %s failed", session)
            again = {member: retry_at for member, of, _ in marks if of == session}
            client.zadd(_key("pending"), again)
            kept.update(again)
    return written, kept


def remember_and_extract(*, marks: dict[uuid.UUID, int]) -> int:
    """Write the memories of the marked sessions' pending turns, then publish one
    extraction task for those of them that extraction may find something in. Returns
    how many memories were written."""
    written = conversation_remember_marked(marks=marks)
    _publish_extraction(written)
    return len(written)


def _publish_extraction(written: Sequence[ChatTurn]) -> None:
    extract = [turn.pk for turn in written if extraction_may_find(turn.user_message)]
    if extract:
        from memory_app.tasks import extract_memories_from_turns

        task_publish(extract_memories_from_turns, extract)


def remember_turn_and_extract(*, turn_id: int) -> int:
    """`remember_and_extract` for a sender that names only the turn: its session's
    pending turns up to it; 0 when it is gone or rolled back."""
    turn = turn_get_by_id(turn_id=turn_id)
    if turn is None or turn.rolled_back:
        return 0
    return remember_and_extract(marks={turn.session_id: turn.turn_number})
