"""Browser pages (server-rendered)."""

from django.urls import path
from django.views.generic import RedirectView

from analytics_app.pages.views import spend_dashboard

urlpatterns = [
    path("dashboards/", RedirectView.as_view(pattern_name="dashboard-spend"), name="dashboards"),
    path("dashboards/spend/", spend_dashboard, name="dashboard-spend"),
]
