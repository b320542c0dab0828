"""Start-up checks of memory_app's settings: a typo stops the server at start, not each
embedding later."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks

EMBEDDING_BACKENDS = ("local", "openai")
EMBEDDING_RUNTIMES = ("onnx", "torch")
EMBEDDING_PRECISIONS = ("fp32", "int8")
LOCAL_MODEL_DIMENSIONS = 384  # what the local all-MiniLM-L6-v2 produces
# (setting, accepted values, check id)
CHOICES = [
    ("ENGRAM_EMBEDDING_BACKEND", EMBEDDING_BACKENDS, "engram.E010"),
    ("ENGRAM_EMBEDDING_RUNTIME", EMBEDDING_RUNTIMES, "engram.E011"),
    ("ENGRAM_EMBEDDING_PRECISION", EMBEDDING_PRECISIONS, "engram.E013"),
]


@checks.register(checks.Tags.compatibility)
def check_embedding_settings(**kwargs: Any) -> list[checks.CheckMessage]:
    errors: list[checks.CheckMessage] = []
    for name, accepted, check_id in CHOICES:
        value = getattr(settings, name)
        if value not in accepted:
            errors.append(
                checks.Error(f"{name}={value!r} is not one of {', '.join(accepted)}", id=check_id)
            )
    dimensions = settings.ENGRAM_EMBEDDING_DIMENSIONS
    if settings.ENGRAM_EMBEDDING_BACKEND == "local" and dimensions != LOCAL_MODEL_DIMENSIONS:
        errors.append(
            checks.Error(
                f"ENGRAM_EMBEDDING_DIMENSIONS={dimensions} but the local model produces "
                f"{LOCAL_MODEL_DIMENSIONS}-dimensional vectors",
                id="engram.E012",
            )
        )
    return errors
