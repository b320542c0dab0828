"""Background mode: turns go into a bounded in-memory queue and a daemon thread sends
them in batches (`POST /turns/batch`), the way Langfuse's SDK does. A server without the
batch route (404/405) gets one request per turn instead. Each turn keeps the
Idempotency-Key made when it was queued, so a resend never counts it twice. A turn queued
with `if_match` goes alone, by the single route with its If-Match, after the turns queued
before it; its refusal (`PreconditionFailed`) is kept in `failed` as any other."""

from __future__ import annotations

import atexit
import logging
import queue
import threading
from dataclasses import dataclass
from typing import Any

from engram._errors import APIError, EngramError
from engram._http import Request, SyncTransport

log = logging.getLogger("engram")


@dataclass(frozen=True)
class QueuedTurn:
    session_id: str
    body: dict[str, Any]
    idempotency_key: str
    if_match: str | None = None  # the turn's If-Match: it is sent alone (see `_send`)


class BackgroundSender:
    def __init__(
        self,
        transport: SyncTransport,
        *,
        max_queue: int = 10_000,
        batch_size: int = 100,
        flush_interval: float = 1.0,
    ) -> None:
        self.transport = transport
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.queue: queue.Queue[QueuedTurn] = queue.Queue(maxsize=max_queue)
        self.batch_supported: bool | None = None  # unknown until the first batch
        self.dropped = 0  # turns refused because the queue was full
        self.failed: list[tuple[QueuedTurn, EngramError]] = []  # the last errors, kept short
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="engram-flush", daemon=True)
        self._thread.start()
        atexit.register(self.shutdown)

    def enqueue(self, item: QueuedTurn) -> bool:
        """False, with a warning, when the queue is full: a busy agent is never blocked."""
        try:
            self.queue.put_nowait(item)
        except queue.Full:
            self.dropped += 1
            log.warning("engram: background queue full, turn of %s dropped", item.session_id)
            return False
        return True

    def flush(self, timeout: float | None = None) -> None:
        """Block until every queued turn was sent (or failed, see `failed`)."""
        if timeout is None:
            self.queue.join()
            return
        done = threading.Event()

        def wait() -> None:
            self.queue.join()
            done.set()

        threading.Thread(target=wait, daemon=True).start()
        done.wait(timeout)

    def shutdown(self) -> None:
        if not self._stop.is_set():
            self.flush(timeout=30)
            self._stop.set()
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                first = self.queue.get(timeout=self.flush_interval)
            except queue.Empty:
                continue
            batch = [first]
            while len(batch) < self.batch_size:
                try:
                    batch.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            try:
                self._send(batch)
            except Exception:  # never let the thread die
                log.exception("engram: background flush failed")
            finally:
                for _ in batch:
                    self.queue.task_done()

    def _fail(self, item: QueuedTurn, error: EngramError) -> None:
        log.warning("engram: turn of session %s not recorded: %s", item.session_id, error)
        self.failed = [*self.failed[-99:], (item, error)]

    def _send(self, batch: list[QueuedTurn]) -> None:
        """The turns in queue order: runs of unconditional turns as batches, and each
        turn with `if_match` alone, by the single route, once the turns queued before it
        were sent, so its condition is checked against the state they left (the batch
        route takes If-Match only for a whole batch of one session's turns)."""
        run: list[QueuedTurn] = []
        for item in batch:
            if item.if_match is None:
                run.append(item)
                continue
            self._send_run(run)
            run = []
            self._send_one(item)
        self._send_run(run)

    def _send_run(self, run: list[QueuedTurn]) -> None:
        if not run or (self.batch_supported is not False and self._send_batch(run)):
            return
        for item in run:
            self._send_one(item)

    def _send_one(self, item: QueuedTurn) -> None:
        headers = {"Idempotency-Key": item.idempotency_key}
        if item.if_match is not None:
            headers["If-Match"] = item.if_match
        try:
            self.transport.send(
                Request(
                    "POST", f"/sessions/{item.session_id}/turns", json=item.body, headers=headers
                )
            )
        except EngramError as exc:
            self._fail(item, exc)

    def _send_batch(self, batch: list[QueuedTurn]) -> bool:
        """True if the batch route took the batch (items may still fail one by one)."""
        turns = [
            {"session_id": i.session_id, "idempotency_key": i.idempotency_key, **i.body}
            for i in batch
        ]
        try:
            answer = self.transport.send(
                Request("POST", "/turns/batch", json={"turns": turns}, retry_safe=True)
            )
        except APIError as exc:
            if exc.status in (404, 405):
                self.batch_supported = False
                log.info("engram: no batch route on the server; sending turns one by one")
                return False
            for item in batch:
                self._fail(item, exc)
            return True
        except EngramError as exc:
            for item in batch:
                self._fail(item, exc)
            return True
        self.batch_supported = True
        for item, result in zip(batch, answer.get("results", []), strict=False):
            if result.get("status", 0) >= 400:
                from engram._errors import error_from_response

                self._fail(item, error_from_response(result["status"], result, {}))
        return True
