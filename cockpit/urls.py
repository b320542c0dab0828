"""The cockpit's pages, under the spend dashboard's /dashboards/ prefix."""

from django.urls import URLPattern, path

from cockpit import views_budgets, views_memories, views_sessions, views_users

urlpatterns: list[URLPattern] = [
    path(
        "dashboards/users/<int:tenant>/<path:user_id>/",  # user ids may contain "/"
        views_users.user_page,
        name="cockpit-user",
    ),
    path(
        "dashboards/budgets/<int:tenant>/",
        views_budgets.budgets_page,
        name="cockpit-budgets",
    ),
    path(
        "dashboards/sessions/<uuid:session_id>/",
        views_sessions.session_page,
        name="cockpit-session",
    ),
    path("dashboards/memories/", views_memories.memory_explorer, name="cockpit-memories"),
    path(
        "dashboards/memories/<uuid:memory_id>/",
        views_memories.memory_detail,
        name="cockpit-memory",
    ),
    path(
        "dashboards/memories/<uuid:memory_id>/action",
        views_memories.memory_action,
        name="cockpit-memory-action",
    ),
]
