"""`manage.py prepare_embedder`: load the embedding model now, exporting MiniLM to ONNX and
deriving the graph it serves first if this installation has not yet (`make run` calls it
before the servers start, so no first request waits for them)."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand

from memory_app.embedding import embedder


class Command(BaseCommand):
    help = (
        "Load the embedding model (exporting the local MiniLM to ONNX and deriving its "
        "attention-fused or int8 graph once if needed)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        current = embedder()
        began = time.monotonic()
        vector = current.embed(["prepare the embedder"])[0]
        # Which ONNX file serves: the fused graph, or the plain export it fell back to.
        graph = getattr(current, "graph", None)
        served = f", graph {graph}" if graph else ""
        self.stdout.write(
            f"{current.model_name} ready on {current.runtime} ({len(vector)} dimensions, "
            f"{time.monotonic() - began:.1f} s{served})"
        )
