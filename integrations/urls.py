from django.urls import path

from integrations import views_mcp

urlpatterns = [
    path("mcp/", views_mcp.mcp_endpoint, name="mcp"),
    path("mcp", views_mcp.mcp_endpoint, name="mcp-no-slash"),
]
