from django.apps import AppConfig


class MemoryAppConfig(AppConfig):
    name = "memory_app"
    verbose_name = "Long-term memory and context"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from memory_app import receivers
        from memory_app.window import admin, tasks  # noqa: F401  registers admins and tasks
        from memory_app.window.receivers import enqueue_compaction_when_due
        from memory_app.window.signals import span_compacted
        from sessions_app.hooks import demo_loaded, turn_recorded, user_erased

        turn_recorded.connect(receivers.on_turn_recorded, dispatch_uid="memory_extract_on_turn")
        turn_recorded.connect(
            enqueue_compaction_when_due, dispatch_uid="memory_app.window.compaction"
        )
        span_compacted.connect(receivers.on_span_compacted, dispatch_uid="memory_extract_on_span")
        demo_loaded.connect(receivers.on_demo_loaded, dispatch_uid="memory_demo_on_load")
        user_erased.connect(receivers.on_user_erased, dispatch_uid="memory_erase_user")
