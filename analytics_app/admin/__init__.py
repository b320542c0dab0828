"""analytics_app's admin, one module per concept (Django's autodiscovery imports this)."""

from analytics_app.admin import alerts, prices, rollups  # noqa: F401  registers the admins
