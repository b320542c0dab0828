from django.urls import path

from analytics_app.api import views, views_reconciliation

urlpatterns = [
    path("usage", views.UsageView.as_view(), name="usage"),
    path("usage/imports", views_reconciliation.UsageImportView.as_view(), name="usage-imports"),
    path(
        "usage/reconciliation",
        views_reconciliation.ReconciliationView.as_view(),
        name="usage-reconciliation",
    ),
]
