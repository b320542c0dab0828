from django.urls import path

from sessions_app.api import (
    views_budgets,
    views_imports,
    views_sessions,
    views_tenant,
    views_turn_batches,
    views_turns,
    views_users,
    views_workspace,
)

session = "sessions/<str:session_id>"

urlpatterns = [
    path("sessions", views_sessions.SessionListView.as_view(), name="session-list"),
    path(session, views_sessions.SessionDetailView.as_view(), name="session-detail"),
    path("turns/batch", views_turn_batches.TurnBatchView.as_view(), name="turns-batch"),
    path(
        "conversations/import",
        views_imports.ConversationImportView.as_view(),
        name="conversations-import",
    ),
    path(f"{session}/turns", views_turns.TurnListView.as_view(), name="session-turns"),
    path(f"{session}/turns.jsonl", views_turns.TurnJsonlView.as_view(), name="session-turns-jsonl"),
    path(
        f"{session}/turns/<int:turn_number>",
        views_turns.TurnDetailView.as_view(),
        name="session-turn-detail",
    ),
    path(
        f"{session}/turns/<int:turn_number>/rollback",
        views_turns.TurnRollbackView.as_view(),
        name="session-turn-rollback",
    ),
    path(
        f"{session}/budget/check",
        views_turns.BudgetCheckView.as_view(),
        name="session-budget-check",
    ),
    path(f"{session}/results", views_workspace.ResultsView.as_view(), name="session-results"),
    path(
        f"{session}/components",
        views_workspace.ComponentListView.as_view(),
        name="session-components",
    ),
    path(f"{session}/resolve", views_workspace.ResolveView.as_view(), name="session-resolve"),
    path(f"{session}/focus", views_workspace.FocusView.as_view(), name="session-focus"),
    path(
        f"{session}/selections",
        views_workspace.SelectionListView.as_view(),
        name="session-selections",
    ),
    path(
        f"{session}/selections.csv",
        views_workspace.SelectionCsvView.as_view(),
        name="session-selections-csv",
    ),
    path(
        f"{session}/selections/reorder",
        views_workspace.SelectionReorderView.as_view(),
        name="session-selections-reorder",
    ),
    # <path:> because MPNs may contain slashes ("AB-12/34"); reorder is matched first.
    path(
        f"{session}/selections/<path:mpn>",
        views_workspace.SelectionDetailView.as_view(),
        name="session-selection-detail",
    ),
    path(f"{session}/cart-link", views_workspace.CartLinkView.as_view(), name="session-cart-link"),
    path("budgets", views_budgets.SpendBudgetListView.as_view(), name="budget-list"),
    path(
        "budgets/<str:budget_id>",
        views_budgets.SpendBudgetDetailView.as_view(),
        name="budget-detail",
    ),
    path("tenant", views_tenant.TenantView.as_view(), name="tenant"),
    # <path:> because user ids may contain "/" (a client sends it as %2F, which the server
    # receives decoded); export is matched first, see views_users for a DELETE on it.
    path("users/<path:user_id>/export", views_users.UserExportView.as_view(), name="user-export"),
    path("users/<path:user_id>", views_users.UserErasureView.as_view(), name="user-erase"),
]
