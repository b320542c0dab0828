"""Sections that apps above analytics_app add to the spend dashboard.

The spend dashboard is analytics_app's page, but some of what operators want beside the
spend is owned by an app analytics_app must not import (memory growth is memory_app's;
the layering in pyproject.toml forbids the import). An app of the top layer that may read
both (cockpit) registers a panel source here in its `AppConfig.ready()`; the page renders
whatever is registered, in registration order, as a chart with the table it is drawn from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.utils.safestring import SafeString

from analytics_app.selectors.dashboards import DashboardFilter


@dataclass(frozen=True)
class DashboardPanel:
    """One section: `slug` is its HTML id, `rows` the table (already formatted cells)
    under `columns`; `chart` is drawn from the same rows."""

    slug: str
    title: str
    columns: tuple[str, ...]
    rows: list[tuple[str, ...]]
    chart: SafeString


PanelSource = Callable[[DashboardFilter], DashboardPanel]
_sources: list[PanelSource] = []


def register_dashboard_panel(source: PanelSource) -> None:
    """Add a panel to the spend dashboard; registering the same function twice keeps one."""
    if source not in _sources:
        _sources.append(source)


def dashboard_panels(f: DashboardFilter) -> list[DashboardPanel]:
    """The registered panels for this filter."""
    return [source(f) for source in _sources]
