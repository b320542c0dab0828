from django.apps import AppConfig


class CockpitConfig(AppConfig):
    """Operators' pages that combine memories, spend and sessions. Top layer: reads
    through the other apps' selectors and writes through their services; no tables."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "cockpit"
    verbose_name = "Operators' cockpit"
