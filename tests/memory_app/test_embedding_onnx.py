"""MiniLM on ONNX Runtime: the same vectors as sentence-transformers on PyTorch, served
from the attention-fused graph, exported and derived once per installation even when
processes start together; a fused graph that cannot be had falls back to the plain export,
a broken export to PyTorch, instead of failing writes and searches. Real model, real
runtimes."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.core.management import call_command

from memory_app.embedding import LocalEmbedder, embedder
from memory_app.embedding_fused import ensure_fused, fused_path
from memory_app.embedding_onnx import (
    PARALLEL_MIN_TEXTS,
    OnnxEmbedder,
    ensure_exported,
    onnx_path,
)
from memory_app.embedding_quantized import ensure_quantized, quantized_path
from memory_app.embedding_session import model_dir

ROOT = Path(__file__).resolve().parents[2]
TEXTS = [
    "What did Caroline research last week?",
    "",
    "   whitespace around   ",
    "Ünïcödé, emoji 🎉 and CJK 日本語 in one line.",
    "I went to the LGBTQ support group yesterday and it was so powerful.",
    # Past the model's 256-token window: both runtimes must truncate alike.
    " ".join(f"sentence {index} talks about hiking, painting and the beach" for index in range(80)),
]


@pytest.fixture(scope="module")
def torch_embedder() -> LocalEmbedder:
    return LocalEmbedder(settings.ENGRAM_EMBEDDING_MODEL, 64)


def _onnx(
    cache_dir: Path, fallback=None, threads: int = 1, precision: str = "fp32"
) -> OnnxEmbedder:  # type: ignore[no-untyped-def]
    return OnnxEmbedder(
        settings.ENGRAM_EMBEDDING_MODEL,
        4,  # small batches: the order-restoring path runs
        cache_dir=cache_dir,
        threads=threads,
        fallback=fallback or (lambda: LocalEmbedder(settings.ENGRAM_EMBEDDING_MODEL, 64)),
        dimensions=settings.ENGRAM_EMBEDDING_DIMENSIONS,
        precision=precision,
    )


def test_the_default_embedder_runs_on_onnx_and_gives_pytorchs_vectors(
    torch_embedder: LocalEmbedder,
) -> None:
    current = embedder()
    assert isinstance(current, OnnxEmbedder)
    got = np.array(current.embed(TEXTS))
    assert current.runtime == "onnx"  # loaded the export, not the fallback
    exported = onnx_path(current.cache_dir, model_dir())
    assert current.graph == fused_path(exported).name  # the fused graph, not the export
    expected = np.array(torch_embedder.embed(TEXTS))
    assert got.shape == (len(TEXTS), 384)
    cosines = (got * expected).sum(axis=1)
    assert cosines.min() > 0.99999, cosines
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # One at a time (no padding) and in a padded batch: the same vectors.
    alone = np.array([current.embed([text])[0] for text in TEXTS])
    assert np.abs(alone - got).max() < 1e-5


def _batch_texts() -> list[str]:
    """More texts than a parallel batch needs, of many lengths and out of length order."""
    return [
        f"{TEXTS[index % len(TEXTS)]} {'and again ' * (index % 7)}#{index}"
        for index in range(PARALLEL_MIN_TEXTS + 13)
    ]


def test_a_batch_embedded_in_parallel_chunks_gives_each_text_its_own_vector() -> None:
    """Chunks of a sorted batch go to two threads at once; every vector comes back at
    its text's place, equal to the text embedded alone."""
    cache_dir = Path(settings.ENGRAM_EMBEDDING_ONNX_DIR)
    parallel = _onnx(cache_dir, threads=2)
    texts = _batch_texts()
    got = np.array(parallel.embed(texts))
    alone = np.array([embedder().embed([text])[0] for text in texts])
    assert np.abs(got - alone).max() < 1e-5
    assert parallel._pool is not None  # the chunks did go through the pool


def test_a_forked_process_embeds_batches_with_its_own_threads() -> None:
    """A prefork worker inherits the embedder after the parent used it: the child's pool
    must not be the parent's (whose threads do not exist in the child)."""
    import multiprocessing

    parallel = _onnx(Path(settings.ENGRAM_EMBEDDING_ONNX_DIR), threads=2)
    texts = _batch_texts()
    expected = parallel.embed(texts)  # the parent's pool now has its threads
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)

    def child() -> None:
        writer.send(parallel.embed(texts))

    process = context.Process(target=child)
    process.start()
    try:
        assert reader.poll(120), "the forked process never answered"
        got = reader.recv()
    finally:
        process.join(10)
        if process.is_alive():
            process.kill()
    assert np.abs(np.array(got) - np.array(expected)).max() < 1e-5


def test_a_broken_export_falls_back_to_pytorch(
    tmp_path: Path, torch_embedder: LocalEmbedder
) -> None:
    target = onnx_path(tmp_path, model_dir())
    target.write_bytes(b"not an onnx graph")  # a truncated or foreign file at the key
    fused_path(target).write_bytes(b"not an onnx graph either")
    broken = _onnx(tmp_path)
    vectors = np.array(broken.embed(TEXTS[:2]))
    assert broken.runtime == "torch"
    expected = np.array(torch_embedder.embed(TEXTS[:2]))
    assert np.abs(vectors - expected).max() < 1e-6


def _plain_export_in(cache_dir: Path) -> Path:
    """This installation's plain export copied into `cache_dir` under its key: the file an
    export there would publish, without the seconds it takes."""
    exported = ensure_exported(Path(settings.ENGRAM_EMBEDDING_ONNX_DIR))
    return Path(shutil.copy(exported, cache_dir / exported.name))


def _operators(path: Path) -> Counter[str]:
    import onnx

    return Counter(node.op_type for node in onnx.load(str(path)).graph.node)


def test_the_fused_graph_runs_one_attention_operator_per_layer() -> None:
    exported = ensure_exported(Path(settings.ENGRAM_EMBEDDING_ONNX_DIR))
    fused, plain = _operators(ensure_fused(exported, model_dir())), _operators(exported)
    layers = json.loads((model_dir() / "config.json").read_text())["num_hidden_layers"]
    assert fused["Attention"] == layers and plain["Attention"] == 0
    assert fused["Softmax"] == 0 and plain["Softmax"] == layers  # attention's pieces are gone
    assert fused["EmbedLayerNormalization"] == 1
    assert sum(fused.values()) < sum(plain.values()) / 3, (fused, plain)


def _optimizer_that_fuses_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    import onnx
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.onnx_model import OnnxModel

    monkeypatch.setattr(optimizer, "optimize_model", lambda path, **_: OnnxModel(onnx.load(path)))


@pytest.mark.parametrize("failure", ["the optimizer fuses nothing", "a corrupt fused file"])
def test_without_the_fused_graph_the_plain_export_serves_the_same_vectors(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    torch_embedder: LocalEmbedder,
    failure: str,
) -> None:
    exported = _plain_export_in(tmp_path)
    if failure == "a corrupt fused file":
        fused_path(exported).write_bytes(b"half a graph")
    else:
        _optimizer_that_fuses_nothing(monkeypatch)
    plain = _onnx(tmp_path)
    with caplog.at_level(logging.ERROR, logger="memory_app.embedding_onnx"):
        got = np.array(plain.embed(TEXTS))
        plain.embed(TEXTS[:2])
    assert plain.runtime == "onnx" and plain.graph == exported.name
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 1 and "fused" in messages[0], messages  # once, not at every call
    cosines = (got * np.array(torch_embedder.embed(TEXTS))).sum(axis=1)
    assert cosines.min() > 0.99999, cosines
    assert np.abs(got - np.array(embedder().embed(TEXTS))).max() < 1e-5  # the fused ones
    if failure == "the optimizer fuses nothing":  # refused: nothing published, nothing left
        assert [path.name for path in tmp_path.iterdir() if path.name != ".export.lock"] == [
            exported.name
        ]


def test_processes_starting_together_export_and_fuse_once(tmp_path: Path) -> None:
    """Two processes (gunicorn workers, a Celery worker) load the model at the same time
    into an empty cache: one exports, the other waits and reuses the file; likewise one
    derives the fused graph."""
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        from memory_app.embedding_fused import ensure_fused
        from memory_app.embedding_onnx import ensure_exported
        from memory_app.embedding_session import model_dir
        say = lambda line: print("PROGRESS", line)
        path = ensure_exported(Path({str(tmp_path)!r}), progress=say)
        print("PATH", path)
        print("PATH", ensure_fused(path, model_dir(), progress=say))
        """
    )
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [process.communicate(timeout=600) for process in processes]
    assert [process.returncode for process in processes] == [0, 0], outputs
    stdouts = [out for out, _ in outputs]
    assert sum(out.count("PROGRESS exporting") for out in stdouts) == 1, stdouts
    assert sum(out.count("PROGRESS deriving the attention-fused") for out in stdouts) == 1
    lines = [line for out in stdouts for line in out.splitlines()]
    paths = {line.split(" ", 1)[1] for line in lines if line.startswith("PATH")}
    assert len(paths) == 2  # the export and the fused graph, the same in both processes
    published = sorted(path.name for path in tmp_path.iterdir() if not path.name.startswith("."))
    assert published == sorted(Path(path).name for path in paths)  # no partial file left
    # And the files serve: a third caller returns them without exporting or deriving.
    exported = ensure_exported(tmp_path, progress=pytest.fail)
    assert ensure_fused(exported, model_dir(), progress=pytest.fail) == fused_path(exported)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ENGRAM_EMBEDDING_RUNTIME", "tensorflow"),
        ("ENGRAM_EMBEDDING_BACKEND", "locale"),
        ("ENGRAM_EMBEDDING_PRECISION", "int4"),
    ],
)
def test_a_misspelt_embedding_setting_stops_the_start(name: str, value: str) -> None:
    from django.core.management import CommandError
    from django.test import override_settings

    call_command("check")  # the real settings pass
    with override_settings(**{name: value}), pytest.raises(CommandError, match=name):
        call_command("check")


def test_prepare_embedder_reports_the_runtime(capsys: pytest.CaptureFixture[str]) -> None:
    call_command("prepare_embedder")
    out = capsys.readouterr().out
    assert "ready on onnx (384 dimensions" in out
    assert "-fused.onnx)" in out  # names the graph it serves


def test_the_int8_precision_runs_a_quantized_graph_whose_vectors_carry_their_own_name(
    tmp_path: Path,
) -> None:
    """ENGRAM_EMBEDDING_PRECISION=int8: the exported graph quantized once beside it; its
    vectors are near float32's (cosine > 0.97) but not the same, so they are stored under
    another model's name; a batch in parallel chunks gives each text its own vector."""
    exported = ensure_exported(tmp_path)
    quantized = _onnx(tmp_path, threads=2, precision="int8")
    texts = _batch_texts()
    got = np.array(quantized.embed(texts))
    assert quantized.runtime == "onnx"
    assert quantized.model_name == f"{settings.ENGRAM_EMBEDDING_MODEL}-int8"
    # Quantized from the plain export, as before the fused graph, which int8 never derives.
    assert quantized.graph == quantized_path(exported).name == f"{exported.stem}-int8.onnx"
    assert not fused_path(exported).exists()
    float32 = np.array(embedder().embed(texts))
    cosines = (got * float32).sum(axis=1)
    assert cosines.min() > 0.97 and cosines.max() < 0.99999, cosines
    alone = np.array([quantized.embed([text])[0] for text in texts])
    # Activations are quantized per run, so each text runs alone: its vector does not
    # depend on the texts embedded with it.
    assert np.abs(got - alone).max() < 1e-5
    # The file serves the next process without quantizing again.
    assert ensure_quantized(exported, model_dir(), progress=pytest.fail) == quantized_path(exported)


def test_the_runtime_threads_take_no_cpu_between_runs() -> None:
    """The pool's threads spin while a run lasts and stop when it returns: a web worker
    embeds one query between database calls, and a thread spinning on after the run
    would take the core those calls (and the other workers) need. Measured in a process
    of its own, which runs nothing else: its CPU time over a loop of short runs and
    pauses is at most two threads busy for the runs' length, plus a small part of the
    pauses."""
    graph = ensure_fused(ensure_exported(Path(settings.ENGRAM_EMBEDDING_ONNX_DIR)), model_dir())
    script = textwrap.dedent(
        f"""
        import json, resource, sys, time
        from pathlib import Path
        sys.path.insert(0, {str(ROOT)!r})
        from memory_app.embedding_session import OnnxSentenceModel, model_dir

        model = OnnxSentenceModel(Path({str(graph)!r}), model_dir(), threads=2)
        for _ in range(10):
            model.embed(["a warm-up question about the weekend"])

        def cpu():
            usage = resource.getrusage(resource.RUSAGE_SELF)
            return usage.ru_utime + usage.ru_stime

        busy, pauses, began = 0.0, 0.0, cpu()
        for index in range(60):
            start = time.perf_counter()
            model.embed([f"what did I tell you about trip number {{index}}?"])
            busy += time.perf_counter() - start
            start = time.perf_counter()
            time.sleep(0.003)
            pauses += time.perf_counter() - start
        print(json.dumps({{"cpu": cpu() - began, "busy": busy, "pauses": pauses}}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True
    )
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    between_runs = measured["cpu"] - 2 * measured["busy"]
    assert between_runs < 0.25 * measured["pauses"], measured
