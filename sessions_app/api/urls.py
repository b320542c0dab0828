from django.urls import path

from sessions_app.api import views_sessions, views_turns

urlpatterns = [
    path("sessions", views_sessions.SessionListView.as_view(), name="session-list"),
    path(
        "sessions/<str:session_id>",
        views_sessions.SessionDetailView.as_view(),
        name="session-detail",
    ),
    path(
        "sessions/<str:session_id>/turns",
        views_turns.TurnListView.as_view(),
        name="session-turns",
    ),
    path(
        "sessions/<str:session_id>/turns/<int:turn_number>/rollback",
        views_turns.TurnRollbackView.as_view(),
        name="session-turn-rollback",
    ),
    path(
        "sessions/<str:session_id>/budget/check",
        views_turns.BudgetCheckView.as_view(),
        name="session-budget-check",
    ),
]
