from django.urls import path

from analytics_app.api import views

urlpatterns = [
    path("usage", views.UsageView.as_view(), name="usage"),
]
