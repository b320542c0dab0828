"""B2's warm-up before a size is measured: every user searched once in process, and
every gunicorn worker made to load MiniLM, so the measured requests meet a server that
has answered its users before."""

from __future__ import annotations

import time
from typing import Any

from bench.b2_vector_checks import K
from bench.loadgen import HttpPoster
from bench.memory_data import query_texts
from bench.servers import Gunicorn


def search_every_user_once(*, tenant: Any, users: int, log: Any, seed: int) -> None:
    """Each user of the tenant searched once, in both shapes, with queries the measured
    requests never send: the state of a server that has answered every user before, whose
    buffer pool holds the pages their searches read. Without it, the 1M "user" shape
    measured the first search of 600 users (each page copied from the OS page cache into
    the pool, or read from the disk), and the 10k one a pool that held everything: a
    comparison of cache states, not of searches. First searches are measured on their
    own in the notes."""
    from memory_app.embedding import embed_texts
    from memory_app.selectors.memories import Actor
    from memory_app.selectors.search import memory_search

    texts = query_texts(seed * 1_000_000 + 999, 20)
    vectors = embed_texts(texts)
    started = time.monotonic()
    for index in range(users):
        user = f"user-{index}"
        for user_id in (user, None):
            memory_search(
                tenant=tenant,
                actor=Actor(user_id=user),
                query=texts[index % len(texts)],
                user_id=user_id,
                limit=K,
                query_embedding=vectors[index % len(vectors)],
            )
        if (index + 1) % 250 == 0:
            log(f"[B2] warm-up: {index + 1:,}/{users:,} users searched once")
    log(f"[B2] warm-up: {users:,} users x 2 shapes in {time.monotonic() - started:.1f}s")


def warm_every_worker(server: Gunicorn, secret: str, body: bytes, connections: int = 12) -> None:
    """Each gunicorn worker loads MiniLM on its first search (seconds). Keep-alive clients
    may all land on one worker during their warm-up, so a few fresh connections make sure
    every worker has loaded it before anything is measured."""
    for _ in range(connections):
        poster = HttpPoster(
            port=server.port,
            paths=["/api/v1/memories/search"],
            body=body,
            headers={"Authorization": f"Bearer {secret}", "Connection": "close"},
            expect=200,
            timeout=600,  # loading MiniLM took over 30 s on the shared machine under load
        )
        poster()
