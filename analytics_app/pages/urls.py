"""Browser pages (server-rendered)."""

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
