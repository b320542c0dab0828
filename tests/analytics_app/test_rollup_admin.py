"""The rollup admin shows every counter the rollups keep (one list, ROLLUP_COUNTERS)."""

from __future__ import annotations

from django.contrib import admin

from analytics_app.models import ROLLUP_COUNTERS, SpendRollup, UserSpendRollup


def test_rollup_admin_lists_every_counter() -> None:
    for model in (SpendRollup, UserSpendRollup):
        shown = admin.site._registry[model].list_display
        assert [name for name in shown if name in ROLLUP_COUNTERS] == list(ROLLUP_COUNTERS)
