from django.apps import AppConfig


class MemoryAppConfig(AppConfig):
    name = "memory_app"
    verbose_name = "Long-term memory and context"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from memory_app import admin_window, tasks_window  # noqa: F401  registers them
        from memory_app.receivers_window import enqueue_compaction_when_due
        from sessions_app.hooks import turn_recorded

        turn_recorded.connect(
            enqueue_compaction_when_due, dispatch_uid="memory_app.window.compaction"
        )
