from django.apps import AppConfig


class AnalyticsAppConfig(AppConfig):
    name = "analytics_app"
    verbose_name = "Spend analytics"
    default_auto_field = "django.db.models.BigAutoField"
