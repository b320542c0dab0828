from django.urls import path

from integrations import views_mcp, views_otlp

urlpatterns = [
    path("mcp/", views_mcp.McpView.as_view(), name="mcp"),
    path("mcp", views_mcp.McpWithoutSlashView.as_view(), name="mcp-without-slash"),
    path("v1/traces", views_otlp.OtlpTracesView.as_view(), name="otlp-traces"),
]
