from django.urls import path

from memory_app.api.views_context import SessionContextView

urlpatterns = [
    path(
        "sessions/<str:session_id>/context",
        SessionContextView.as_view(),
        name="session-context",
    ),
]
