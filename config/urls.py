from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from config.health import healthz

api_v1 = [
    path("", include("sessions_app.api.urls")),
    path("", include("memory_app.api.urls")),
    path("", include("memory_app.api.urls_context")),
    path("", include("analytics_app.api.urls")),
]

# The admin is the operators' cockpit: it says whose it is (templates/admin/index.html
# adds the dashboards to its index).
admin.site.site_header = "Engram"
admin.site.site_title = "Engram admin"
admin.site.index_title = "Operations"

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/v1/", include(api_v1)),
    path(
        "api/schema/",
        SpectacularAPIView.as_view(authentication_classes=[], permission_classes=[]),
        name="schema",
    ),
    path(
        "api/docs/",
        SpectacularSwaggerView.as_view(
            url_name="schema", authentication_classes=[], permission_classes=[]
        ),
        name="swagger-ui",
    ),
    path("", include("integrations.urls")),
    path("", include("sessions_app.pages.urls")),
    path("", include("analytics_app.pages.urls")),
    path("", include("cockpit.urls")),
]
