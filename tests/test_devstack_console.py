"""`make run`'s console: a chatty preparation step (the first run's ONNX export) shows one
line before and its last line after, and everything only when it fails."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from config import devstack

CHATTY = """import sys
for n in range(300):
    print(f"INFO exporter pass {n}", file=sys.stderr if n % 2 else sys.stdout)
if sys.argv[1] == "fail":
    sys.exit(3)
print("model ready on onnx")
"""


def test_a_chatty_step_prints_two_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "manage.py").write_text(CHATTY)
    monkeypatch.setattr(devstack, "ROOT", tmp_path)
    devstack._manage_quietly("ok", announce="loading the model…")
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("|", 1)[1].strip() for line in lines] == [
        "loading the model…",
        "model ready on onnx",
    ]


def test_a_failing_step_shows_all_it_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "manage.py").write_text(CHATTY)
    monkeypatch.setattr(devstack, "ROOT", tmp_path)
    with pytest.raises(subprocess.CalledProcessError):
        devstack._manage_quietly("fail", announce="loading the model…")
    out = capsys.readouterr().out
    assert "INFO exporter pass 0" in out and "INFO exporter pass 299" in out
