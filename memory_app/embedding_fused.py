"""MiniLM's float32 graph with its attention fused: the graph the fp32 ONNX runtime serves.

The export of `memory_app.embedding_onnx` (torch's dynamo exporter) runs each layer as
some forty small operators (MatMul, Add, Reshape, Transpose, Softmax, LayerNormalization…).
ONNX Runtime's transformer optimizer rewrites BERT's subgraphs into fused CPU kernels (one
Attention per layer, SkipLayerNormalization, BiasGelu, one EmbedLayerNormalization), about
ten operators a layer. It recognises them only as the TorchScript exporter writes
transformers' eager attention (neither the dynamo export nor SDPA attention fuse), so this
graph is exported again that way from the same shipped weights. The vectors are the same.
A query's few tokens make little work per operator, and each operator split across the
runtime's threads is a hand-off between them (`embedding_session.session_options`):
fewer, larger operators mean fewer hand-offs (figures: docs/decisions/onnx-embedder.md).

The graph is derived once, like the export: checked against PyTorch on the probe texts
(EXPORT_MIN_COSINE) and for its fused operators (one Attention per layer: a graph the
optimizer left unfused is refused, not published under the fused name), then published
beside the export, under its lock, as `<export>-fused.onnx`. The export's key names the
weights, tokenizer, config and ONNX Runtime version, which ships the optimizer: a new
wheel or runtime gets a new file. Deriving it needs torch, `onnx` and sympy
(requirements/embedding.txt); the image derives it in its export stage.

The plain export stays: the int8 graph is quantized from it (`embedding_quantized`), and
`OnnxEmbedder` serves it, having logged why, when the fused graph cannot be had.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory_app.embedding_cache import publish_once

logger = logging.getLogger(__name__)

# The TorchScript exporter's opset: the one the optimizer's BERT patterns are written for.
TRACE_OPSET = 17


def fused_path(exported: Path) -> Path:
    return exported.with_name(f"{exported.stem}-fused.onnx")


def ensure_fused(
    exported: Path, folder: Path, progress: Callable[[str], None] | None = None
) -> Path:
    """The attention-fused graph of the model whose export is at `exported`, deriving it
    first if no process has (the export's lock: concurrent callers wait and reuse it)."""
    from memory_app.embedding_onnx import sentence_module, verify_against_pytorch

    target = fused_path(exported)

    def derive(partial: Path) -> None:
        say = progress or logger.info
        say(f"deriving the attention-fused ONNX graph at {target} (once; ~5 s)")
        began = time.monotonic()
        model, module = sentence_module(folder, attention="eager")
        _trace(folder, module, partial)
        _optimize(partial, folder)
        verify_against_pytorch(folder, model, partial)
        say(f"fused ONNX graph verified in {time.monotonic() - began:.1f} s")

    return publish_once(target, derive)


def _trace(folder: Path, module: Any, destination: Path) -> None:
    """The TorchScript export of `module`, batch and token axes dynamic."""
    from memory_app.embedding_onnx import export_graph
    from memory_app.embedding_session import INPUT_NAMES

    axes = {name: {0: "batch", 1: "tokens"} for name in INPUT_NAMES}
    export_graph(
        folder,
        module,
        destination,
        dynamic_axes={**axes, "sentence_vector": {0: "batch"}},
        opset_version=TRACE_OPSET,
        dynamo=False,
    )


def _optimize(traced: Path, folder: Path) -> None:
    """The traced graph through ONNX Runtime's BERT optimizer, written back in its place
    only if it fused every layer's attention."""
    from onnxruntime.transformers.optimizer import optimize_model

    config = json.loads((folder / "config.json").read_text())
    optimized = optimize_model(
        str(traced),
        model_type="bert",
        num_heads=int(config["num_attention_heads"]),
        hidden_size=int(config["hidden_size"]),
    )
    operators = Counter(node.op_type for node in optimized.model.graph.node)
    layers = int(config["num_hidden_layers"])
    if operators["Attention"] != layers:
        raise RuntimeError(
            f"the optimizer fused {operators['Attention']} attention layers of {layers}; "
            "the fused graph is not used"
        )
    optimized.save_model_to_file(str(traced))
