from __future__ import annotations

from django.contrib import admin

from analytics_app.models import ModelPrice


@admin.register(ModelPrice)
class ModelPriceAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in django-stubs only
    list_display = [
        "model",
        "provider",
        "input_per_million",
        "cached_input_per_million",
        "cache_write_per_million",
        "output_per_million",
        "context_window",
        "valid_from",
        "source",
    ]
    list_filter = ["provider"]
    search_fields = ["model", "aliases", "pattern"]
    date_hierarchy = "valid_from"
    show_full_result_count = False
