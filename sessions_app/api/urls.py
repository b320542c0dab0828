from django.urls import path

from sessions_app.api import views_sessions

urlpatterns = [
    path("sessions", views_sessions.SessionListView.as_view(), name="session-list"),
    path(
        "sessions/<str:session_id>",
        views_sessions.SessionDetailView.as_view(),
        name="session-detail",
    ),
]
