from django.apps import AppConfig


class CockpitConfig(AppConfig):
    """Operators' pages that combine memories, spend and sessions. Top layer: reads
    through the other apps' selectors and writes through their services; no tables."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "cockpit"
    verbose_name = "Operators' cockpit"

    def ready(self) -> None:
        from analytics_app.pages.panels import register_dashboard_panel
        from cockpit.panels import memory_growth_panel

        register_dashboard_panel(memory_growth_panel)
