"""The operators' pages render inside the admin's frame."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def operator_render(
    request: HttpRequest, template: str, context: Mapping[str, Any], status: int | None = None
) -> HttpResponse:
    """`render` with the admin site's context under the page's own: the site header and
    title, the user tools (log out, change password) and `has_permission`, which shows
    the operators' navigation (templates/admin/base_site.html). The admin's app sidebar
    stays off: the cockpit's tables need the width."""
    frame = admin.site.each_context(request)
    frame["is_nav_sidebar_enabled"] = False
    return render(request, template, {**frame, **context}, status=status)
