"""The steady phase of `python -m bench.turn_recall`: turns recorded on a fixed schedule by
concurrent senders while one poller times when each turn's memory is committed, and the
turns' lines and auth header that the burst phase shares.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench.percentiles import percentile

LINES = [
    "We talked about the {w} trip and the hotel near the station.",
    "My sister recommended the {w} bakery on the corner, worth a try.",
    "I finally fixed the {w} bike, the chain was the problem.",
    "Remind me that the {w} meeting moved to Thursday afternoon.",
]


def unique_word() -> str:
    """A word no other turn says: what a search for the turn's memory looks for."""
    return "zq" + uuid.uuid4().hex[:10]


def auth_headers(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def _steady_sessions(base: str, secret: str, users: int) -> dict[str, str]:
    """A session for each steady user (`steady-<n>`): its id by user."""
    sessions: dict[str, str] = {}
    for index in range(users):
        response = httpx.post(
            f"{base}/api/v1/sessions",
            json={"user_id": f"steady-{index}", "agent_id": "bench"},
            headers=auth_headers(secret),
            timeout=120,
        )
        response.raise_for_status()
        sessions[f"steady-{index}"] = response.json()["id"]
    return sessions


@dataclass
class SteadyRun:
    """One steady run: what its senders record under `lock` and its poller reads.

    `acknowledged` maps (session, turn number) to (word, user, when answered 201);
    `latencies` maps the same key to the seconds from that 201 to its memory being seen.
    """

    base: str
    secret: str
    users: int
    rate: float
    total: int
    sessions: dict[str, str]
    stored: Any
    acknowledged: dict[tuple[str, int], tuple[str, str, float]] = field(default_factory=dict)
    latencies: dict[tuple[str, int], float] = field(default_factory=dict)
    starts: list[float] = field(default_factory=list)
    lateness: list[float] = field(default_factory=list)
    answer_times: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    finished: threading.Event = field(default_factory=threading.Event)
    began: float = 0.0
    finished_at: float = 0.0
    numbers: Iterator[int] = field(init=False)

    def __post_init__(self) -> None:
        self.numbers = iter(range(self.total))

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base, headers=auth_headers(self.secret), timeout=120)

    def send(self, client: httpx.Client, number: int) -> None:
        """Turn `number`, sent when due; its answer or its failure kept."""
        user = f"steady-{number % self.users}"
        word = unique_word()
        due = self.began + number / self.rate
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        started = time.monotonic()
        try:
            response = client.post(
                f"/api/v1/sessions/{self.sessions[user]}/turns",
                json={
                    "user_message": LINES[number % len(LINES)].format(w=word),
                    "assistant_response": "Noted.",
                    "steps": [{"step_type": "response", "input_tokens": 10, "output_tokens": 5}],
                },
            )
            response.raise_for_status()
        except httpx.HTTPError as exc:  # counted and reported, never a silent gap
            with self.lock:
                self.failures.append(f"{type(exc).__name__}: {exc}"[:200])
            return
        answered = time.monotonic()
        with self.lock:
            key = (self.sessions[user], response.json()["turn"]["turn_number"])
            self.acknowledged[key] = (word, user, answered)
            self.starts.append(started)
            self.lateness.append(started - due)
            self.answer_times.append(answered - started)

    def sender(self) -> None:
        """Send the next turn not yet taken until none is left, on one connection."""
        with self.client() as client:
            while True:
                with self.lock:
                    number = next(self.numbers, None)
                if number is None:
                    return
                self.send(client, number)

    def poll(self) -> None:
        """Every 100 ms, time the acknowledged turns whose memory is now committed; ends
        when every one has been, or 120 s after the senders finished."""
        while not self.finished.is_set() or len(self.latencies) < len(self.acknowledged):
            with self.lock:
                waiting = {key: at for key, (_, _, at) in self.acknowledged.items()}
            waiting = {key: at for key, at in waiting.items() if key not in self.latencies}
            if waiting:
                seen = time.monotonic()
                for key in self.stored(list(waiting)):
                    self.latencies[key] = seen - waiting[key]
            if self.finished.is_set() and time.monotonic() - self.finished_at > 120:
                return
            time.sleep(0.1)

    def send_all(self, senders: int) -> None:
        """Every turn sent by `senders` concurrent senders, with the poller watching."""
        poller = threading.Thread(target=self.poll)
        poller.start()
        try:
            with ThreadPoolExecutor(max_workers=senders) as pool:
                self.began = time.monotonic()
                futures = [pool.submit(self.sender) for _ in range(senders)]
                for future in futures:
                    future.result()
        finally:  # the poller ends however the senders did
            self.finished_at = time.monotonic()
            self.finished.set()
            poller.join()

    def search_check(self) -> tuple[int, int]:
        """(found, checked): every 10th acknowledged turn's word searched for as its user."""
        found = checked = 0
        with self.client() as client:
            for word, user, _ in list(self.acknowledged.values())[::10]:
                checked += 1
                hits = client.post(
                    "/api/v1/memories/search", json={"query": word, "user_id": user, "limit": 3}
                ).json()["results"]
                found += any(word in hit["memory"]["content"] for hit in hits)
        return found, checked

    def figures(self, senders: int, found: int, checked: int) -> dict[str, Any]:
        values = list(self.latencies.values())
        # From when the first turn was due to the last send: sends that started late and
        # then caught up do not raise it above the rate asked.
        span = max(self.starts) - self.began if len(self.starts) > 1 else 0.0
        return {
            "turns": self.total,
            "rate": self.rate,
            "senders": senders,
            "sent_rate": round((len(self.starts) - 1) / span, 1) if span else None,
            "sent_in_s": round(span, 1),
            "late_p95_s": round(percentile(self.lateness, 95), 3),
            "answer_p50_s": round(percentile(self.answer_times, 50), 3),
            "answer_p95_s": round(percentile(self.answer_times, 95), 3),
            "failed": len(self.failures),
            "failures": sorted(set(self.failures))[:5],
            "remembered": len(values),
            "not_remembered_in_120s": len(self.acknowledged) - len(values),
            "p50_s": round(percentile(values, 50), 3),
            "p95_s": round(percentile(values, 95), 3),
            "max_s": round(max(values), 3) if values else None,
            "search_checked": checked,
            "search_found": found,
        }


def steady(
    base: str,
    secret: str,
    users: int,
    rate: float,
    seconds: float,
    stored: Any,
    senders: int = 24,
) -> dict[str, Any]:
    """Record turns on a fixed schedule (turn n due `n / rate` seconds after the start),
    sent by `senders` concurrent senders (each with its own keep-alive connection, as an
    agent's client), and watch, from one poller, when each turn's memory is committed
    (`stored(turns)` answers which (session, turn number) pairs have a memory); then check
    over HTTP that every 10th is found by a search, as its user, from another session's
    point of view (the memory search). What was really sent is measured, not assumed: the
    rate between the first and the last send, and how late sends started against their
    schedule (a sender busy with a slow answer makes the next turn late)."""
    sessions = _steady_sessions(base, secret, users)
    run = SteadyRun(
        base=base,
        secret=secret,
        users=users,
        rate=rate,
        total=int(rate * seconds),
        sessions=sessions,
        stored=stored,
    )
    run.send_all(senders)
    found, checked = run.search_check()
    return run.figures(senders, found, checked)
