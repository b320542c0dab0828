from django.apps import AppConfig
from django.db.models.signals import post_delete, post_migrate, post_save


class AnalyticsAppConfig(AppConfig):
    name = "analytics_app"
    verbose_name = "Spend analytics"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from analytics_app.models import ModelPrice
        from analytics_app.pricing import price_step_from_table, price_table_clear
        from analytics_app.services.prices import prices_seed_if_empty
        from sessions_app.hooks import register_step_pricer

        register_step_pricer(price_step_from_table)
        for signal in (post_save, post_delete):
            signal.connect(price_table_clear, sender=ModelPrice, dispatch_uid="price_table")
        # A fresh database (and every test database, also after a flush) gets prices.
        post_migrate.connect(prices_seed_if_empty, sender=self, dispatch_uid="prices_seed")
