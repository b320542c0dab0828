from django.apps import AppConfig


class MemoryAppConfig(AppConfig):
    name = "memory_app"
    verbose_name = "Long-term memory and context"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from memory_app import checks, receivers  # noqa: F401  checks registers itself
        from memory_app.selectors.export import memory_user_export
        from memory_app.window import admin, tasks  # noqa: F401  registers admins and tasks
        from memory_app.window.signals import span_compacted
        from sessions_app.hooks import (
            demo_loaded,
            register_user_exporter,
            sessions_ended,
            turn_recorded,
            turns_withdrawn,
            user_erased,
        )

        register_user_exporter("memory_app", memory_user_export)

        # One receiver for the turn's memory and the session's compaction: they share a
        # Valkey round trip (`receivers.on_turn_recorded`).
        turn_recorded.connect(receivers.on_turn_recorded, dispatch_uid="memory_remember_turn")
        turns_withdrawn.connect(receivers.on_turns_withdrawn, dispatch_uid="memory_forget_turns")
        sessions_ended.connect(receivers.on_sessions_ended, dispatch_uid="memory_session_episode")
        span_compacted.connect(receivers.on_span_compacted, dispatch_uid="memory_extract_on_span")
        demo_loaded.connect(receivers.on_demo_loaded, dispatch_uid="memory_demo_on_load")
        user_erased.connect(receivers.on_user_erased, dispatch_uid="memory_erase_user")
