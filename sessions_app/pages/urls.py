"""Browser pages (server-rendered)."""

from django.urls import URLPattern, path

from sessions_app.metrics import metrics_view
from sessions_app.pages import views_cart

urlpatterns: list[URLPattern] = [
    path("metrics", metrics_view, name="metrics"),
    path("cart/<str:token>/", views_cart.cart_page, name="cart-page"),
    path("cart/<str:token>/update", views_cart.cart_update, name="cart-update"),
]
