from django.apps import AppConfig


class MemoryAppConfig(AppConfig):
    name = "memory_app"
    verbose_name = "Long-term memory and context"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from memory_app import receivers
        from sessions_app.hooks import demo_loaded, turn_recorded

        turn_recorded.connect(receivers.on_turn_recorded, dispatch_uid="memory_extract_on_turn")
        demo_loaded.connect(receivers.on_demo_loaded, dispatch_uid="memory_demo_on_load")
