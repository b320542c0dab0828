"""`manage.py prepare_embedder`: load the embedding model now, exporting MiniLM to ONNX
first if this installation has not yet (`make run` calls it before the servers start, so
no first request waits for the export)."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand

from memory_app.embedding import embedder


class Command(BaseCommand):
    help = "Load the embedding model (exporting the local MiniLM to ONNX once if needed)."

    def handle(self, *args: Any, **options: Any) -> None:
        current = embedder()
        began = time.monotonic()
        vector = current.embed(["prepare the embedder"])[0]
        self.stdout.write(
            f"{current.model_name} ready on {current.runtime} ({len(vector)} dimensions, "
            f"{time.monotonic() - began:.1f} s)"
        )
