"""Start-up checks of memory_app's settings: a typo stops the server at start, not each
embedding later."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks

EMBEDDING_BACKENDS = ("local", "openai")
EMBEDDING_RUNTIMES = ("onnx", "torch")


@checks.register(checks.Tags.compatibility)
def check_embedding_settings(**kwargs: Any) -> list[checks.CheckMessage]:
    errors: list[checks.CheckMessage] = []
    if settings.ENGRAM_EMBEDDING_BACKEND not in EMBEDDING_BACKENDS:
        errors.append(
            checks.Error(
                f"ENGRAM_EMBEDDING_BACKEND={settings.ENGRAM_EMBEDDING_BACKEND!r} is not one of "
                f"{', '.join(EMBEDDING_BACKENDS)}",
                id="engram.E010",
            )
        )
    if settings.ENGRAM_EMBEDDING_RUNTIME not in EMBEDDING_RUNTIMES:
        errors.append(
            checks.Error(
                f"ENGRAM_EMBEDDING_RUNTIME={settings.ENGRAM_EMBEDDING_RUNTIME!r} is not one of "
                f"{', '.join(EMBEDDING_RUNTIMES)}",
                id="engram.E011",
            )
        )
    return errors
