from django.urls import path

from memory_app.api.views_context import SessionContextView
from memory_app.api.views_policies import ContextPolicyDetailView, ContextPolicyListView

urlpatterns = [
    path(
        "sessions/<str:session_id>/context",
        SessionContextView.as_view(),
        name="session-context",
    ),
    path(
        "tenant/context-policies",
        ContextPolicyListView.as_view(),
        name="tenant-context-policies",
    ),
    path(
        "tenant/context-policies/<str:name>",
        ContextPolicyDetailView.as_view(),
        name="tenant-context-policy",
    ),
]
