"""Spend, rollups and runaway detection are analytics_app's; they read turns and steps,
never memories. analytics_app does not depend on memory_app (the layering contract in
pyproject.toml), so its tests record turns as a deployment without memory_app would.
A night replayed through the real `turn_record` is ~1,000 turns; memory_app's
reactions run eagerly after each commit (turn indexing with the embedding model,
extraction, compaction) would multiply the replay's time to test memory_app, whose own
tests cover them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.analytics_app.factories import without_memory_reactions


@pytest.fixture(autouse=True)
def _without_memory_app_reactions() -> Iterator[None]:
    with without_memory_reactions():
        yield
