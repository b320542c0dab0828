"""MiniLM with int8 weights (ENGRAM_EMBEDDING_PRECISION=int8): the exported float32 graph
quantized once by ONNX Runtime's dynamic quantization (int8 weights per output channel,
activations quantized per run), from the same shipped weights; nothing is downloaded.
One scale per run for all its texts' activations would make a text's vector depend on
the texts embedded with it, so `OnnxEmbedder` runs each text alone on this graph.

Its vectors are not float32's (cosine ~0.99 on the probe texts), so it is another model:
its vectors are stored under their own name (`quantized_model_name`), and switching a
deployment over changes what new memories and queries are embedded with. Evidence (CPU
per text, recall on both dev sets): docs/decisions/int8-minilm.md.

Like the float32 export, the file is derived once (at image build time, or on first use
where the `onnx` package is installed), written to a temporary name, checked and renamed
into place under the export's file lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from memory_app.embedding_cache import publish_once

logger = logging.getLogger(__name__)

PRECISIONS = ("fp32", "int8")
# Cosine between the int8 graph's vectors and float32's below which the quantized file is
# refused: quantization moves a vector by ~0.01; a broken graph falls far below this.
QUANTIZED_MIN_COSINE = 0.97


def quantized_model_name(model_name: str) -> str:
    return f"{model_name}-int8"


def quantized_path(exported: Path) -> Path:
    return exported.with_name(f"{exported.stem}-int8.onnx")


def ensure_quantized(
    exported: Path, folder: Path, progress: Callable[[str], None] | None = None
) -> Path:
    """The int8 graph derived from the float32 one at `exported`, quantizing it first if
    no process has (the export's lock: concurrent callers wait and reuse the file)."""
    target = quantized_path(exported)

    def quantize(partial: Path) -> None:
        (progress or logger.info)(f"quantizing {exported.name} to int8 at {target}")
        _quantize(exported, partial)
        _verify(exported, partial, folder)

    return publish_once(target, quantize)


def _quantize(source: Path, destination: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(destination), weight_type=QuantType.QInt8, per_channel=True)


def _verify(exported: Path, candidate: Path, folder: Path) -> None:
    import numpy as np

    from memory_app.embedding_onnx import PROBE_TEXTS
    from memory_app.embedding_session import OnnxSentenceModel

    expected = np.asarray(OnnxSentenceModel(exported, folder, threads=1).embed(PROBE_TEXTS))
    got = np.asarray(OnnxSentenceModel(candidate, folder, threads=1).embed(PROBE_TEXTS))
    cosines = (expected * got).sum(axis=1)
    if float(cosines.min()) < QUANTIZED_MIN_COSINE:
        raise RuntimeError(
            f"the int8 graph disagrees with float32 (min cosine {cosines.min():.4f}); not used"
        )
