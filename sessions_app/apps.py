from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Sessions and spend"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from sessions_app.api import (
            schema,  # noqa: F401  registers the auth scheme
            strict_types,
            throttling,  # noqa: F401  registers its settings check
        )
        from sessions_app.hooks import turn_recorded
        from sessions_app.metrics import count_turn_recorded, register_sessions_gauges
        from sessions_app.models import ApiKey, Tenant
        from sessions_app.selectors.api_keys import api_key_cache_clear

        strict_types.install()
        register_sessions_gauges()
        turn_recorded.connect(count_turn_recorded, dispatch_uid="metrics.turns_recorded")

        # Authentication caches verified keys with their tenant for a few seconds.
        for model in (ApiKey, Tenant):
            for signal in (post_save, post_delete):
                signal.connect(api_key_cache_clear, sender=model, dispatch_uid="api_key_cache")
