"""A lean, bounded, closed-loop load generator: N threads, each doing one operation after
another, until a request count or a deadline is reached, whichever comes first.

Threads, not processes: the operations wait on sockets (HTTP or PostgreSQL), which
releases the GIL, and one process keeps the generator's own CPU use small and easy to
measure (it is reported, since on 2 cores it competes with the server under test).
"""

from __future__ import annotations

import http.client
import itertools
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.percentiles import rounded_rank_percentile

Operation = Callable[[], None]  # raises on failure


@dataclass
class LoadResult:
    name: str
    threads: int
    requests: int
    errors: int
    seconds: float
    latencies_ms: list[float] = field(repr=False)
    client_cpu_seconds: float
    first_errors: list[str] = field(default_factory=list)

    @property
    def throughput(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        """The successful operations' latencies at percentile `q` (0..100), at the rank
        `rounded_rank_percentile` explains."""
        return rounded_rank_percentile(self.latencies_ms, q)

    def merged(self, other: LoadResult) -> LoadResult:
        """Two rounds of the same phase as one: requests and time add up."""
        return LoadResult(
            name=self.name,
            threads=self.threads,
            requests=self.requests + other.requests,
            errors=self.errors + other.errors,
            seconds=self.seconds + other.seconds,
            latencies_ms=self.latencies_ms + other.latencies_ms,
            client_cpu_seconds=self.client_cpu_seconds + other.client_cpu_seconds,
            first_errors=(self.first_errors + other.first_errors)[:5],
        )

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "threads": self.threads,
            "requests": self.requests,
            "errors": self.errors,
            "seconds": round(self.seconds, 3),
            "throughput_per_s": round(self.throughput, 1),
            "p50_ms": round(self.percentile(50), 2),
            "p95_ms": round(self.percentile(95), 2),
            "p99_ms": round(self.percentile(99), 2),
            "client_cpu_share_of_one_core": round(self.client_cpu_seconds / self.seconds, 2)
            if self.seconds
            else None,
            "first_errors": self.first_errors,
        }


@dataclass
class _Gate:
    """When the measured operations began and must stop, and this process's CPU time
    then; set by `open` once every thread has warmed up."""

    max_seconds: float
    at_start: Callable[[], None] | None
    began: float = 0.0
    deadline: float = 0.0
    cpu_before: float = 0.0

    def open(self) -> None:
        # Run by the last thread to arrive, before any is released: no worker can read
        # the deadline before it is set (one that did would stop at once, unmeasured).
        if self.at_start is not None:
            self.at_start()
        self.cpu_before = time.process_time()
        self.began = time.perf_counter()
        self.deadline = self.began + self.max_seconds


@dataclass
class _Tally:
    """One thread's measured operations: successful latencies and the failures."""

    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0


def _warm_up(operation: Operation, count: int, errors: list[str]) -> None:
    for _ in range(count):
        try:
            operation()
        except Exception as exc:
            errors.append(f"warm-up: {exc}")


def _run_measured(
    operation: Operation,
    tickets: Iterator[int],
    max_requests: int,
    gate: _Gate,
    tally: _Tally,
    errors: list[str],
) -> None:
    """`operation` again and again while tickets last and the deadline has not passed;
    a failure's message goes to `errors` while that holds fewer than five."""
    latencies = tally.latencies_ms
    clock = time.perf_counter
    while next(tickets) < max_requests and clock() < gate.deadline:
        sent_at = clock()
        try:
            operation()
        except Exception as exc:
            tally.errors += 1
            if len(errors) < 5:
                errors.append(str(exc)[:300])
            continue
        latencies.append((clock() - sent_at) * 1000)


def _result(name: str, gate: _Gate, tallies: list[_Tally], errors: list[str]) -> LoadResult:
    seconds = time.perf_counter() - gate.began
    cpu = time.process_time() - gate.cpu_before
    latencies = [value for tally in tallies for value in tally.latencies_ms]
    return LoadResult(
        name=name,
        threads=len(tallies),
        requests=len(latencies),
        errors=sum(tally.errors for tally in tallies),
        seconds=seconds,
        latencies_ms=latencies,
        client_cpu_seconds=cpu,
        first_errors=errors[:5],
    )


def run_load(
    *,
    name: str,
    operations: Sequence[Operation],
    max_requests: int,
    max_seconds: float,
    warmup_per_thread: int = 5,
    at_start: Callable[[], None] | None = None,
) -> LoadResult:
    """One thread per operation in `operations`. Each first runs `warmup_per_thread`
    uncounted operations (connections, caches, gunicorn workers' first imports), then all
    start together and run until `max_requests` in total or `max_seconds` have passed.
    `at_start` runs once between the warm-up and the measured operations: where a caller
    reads the server's CPU, so the warm-up is not charged to the measured requests."""
    threads = len(operations)
    tickets = itertools.count()  # next() on it is atomic under the GIL
    gate = _Gate(max_seconds, at_start)
    start = threading.Barrier(threads + 1, action=gate.open)
    tallies = [_Tally() for _ in range(threads)]
    errors: list[str] = []

    def worker(index: int) -> None:
        operation = operations[index]
        _warm_up(operation, warmup_per_thread, errors)
        start.wait()
        _run_measured(operation, tickets, max_requests, gate, tallies[index], errors)

    workers = [
        threading.Thread(target=worker, args=(i,), name=f"{name}-{i}", daemon=True)
        for i in range(threads)
    ]
    for thread in workers:
        thread.start()
    start.wait()
    for thread in workers:
        thread.join(timeout=max_seconds + 60)
    return _result(name, gate, tallies, errors)


# The server closed a reused keep-alive connection: the request never reached it.
RESET_ERRORS = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


class HttpPoster:
    """Sends pre-encoded JSON to `paths` in turn on one keep-alive connection,
    reconnecting when the server closes it. Raises on any status other than `expect`.
    With `key_prefix`, every request carries a new `Idempotency-Key`; with `bodies`,
    request n sends bodies[n % len(bodies)] instead of `body` (B2's varied queries);
    `method="GET"` sends no body; `check` may raise on a body with the expected status
    (B1's batches answer 200 with a status per item)."""

    def __init__(
        self,
        *,
        port: int,
        paths: list[str],
        body: bytes = b"",
        headers: dict[str, str],
        expect: int = 201,
        key_prefix: str | None = None,
        bodies: list[bytes] | None = None,
        method: str = "POST",
        check: Callable[[bytes], None] | None = None,
        timeout: float = 30,
    ) -> None:
        self.check = check
        self.timeout = timeout
        self.port = port
        self.paths = paths
        self.bodies = bodies or [body]
        self.method = method
        self.headers = (
            {**headers, "Content-Type": "application/json"} if method != "GET" else headers
        )
        self.expect = expect
        self.key_prefix = key_prefix
        self.sent = 0
        self.conn: http.client.HTTPConnection | None = None

    def __call__(self) -> None:
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        headers = self.headers
        path = self.paths[self.sent % len(self.paths)]
        body: bytes | None = self.bodies[self.sent % len(self.bodies)]
        self.sent += 1
        if self.method == "GET":
            body = None
        else:
            headers = {**headers, "Content-Length": str(len(body or b""))}
        if self.key_prefix is not None:
            headers = {**headers, "Idempotency-Key": f"{self.key_prefix}-{self.sent}"}
        try:
            response, payload = self._send(path, body, headers)
        except (OSError, http.client.HTTPException) as exc:
            if not isinstance(exc, RESET_ERRORS):
                self.conn.close()
                self.conn = None
                raise
            # A keep-alive connection idle past the server's keep-alive timeout (B1's
            # threads idle while the other phases run) is closed by the server: the
            # first request on it fails before reaching the application. Retry once,
            # on a new connection; a second failure is an error.
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            try:
                response, payload = self._send(path, body, headers)
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                raise
        if response.will_close and self.conn is not None:
            self.conn.close()
            self.conn = None
        if response.status != self.expect:
            raise RuntimeError(f"HTTP {response.status}: {payload[:200]!r}")
        if self.check is not None:
            self.check(payload)

    def _send(
        self, path: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[http.client.HTTPResponse, bytes]:
        assert self.conn is not None
        self.conn.request(self.method, path, body, headers)
        response = self.conn.getresponse()
        return response, response.read()
