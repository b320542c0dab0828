"""The cockpit's contributions to the spend dashboard (see analytics_app.pages.panels):
the cockpit may read both memory_app and analytics_app, the dashboard's app may not."""

from __future__ import annotations

from analytics_app.pages.charts import column_chart
from analytics_app.pages.panels import DashboardPanel
from analytics_app.selectors.dashboards import DashboardFilter
from memory_app.selectors.memories import memories_created_per_day


def memory_growth_panel(f: DashboardFilter) -> DashboardPanel:
    """New long-term memories per day in the dashboard's range and tenant."""
    days = [
        (day.isoformat(), count)
        for day, count in memories_created_per_day(start=f.start, end=f.end, tenant_id=f.tenant_id)
    ]
    return DashboardPanel(
        slug="memory",
        title="Memory growth",
        columns=("day", "new memories"),
        rows=[(day, str(count)) for day, count in days],
        chart=column_chart(days, title="New memories"),
    )
