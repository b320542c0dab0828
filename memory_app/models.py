from memory_app.models_window import *  # noqa: F403
