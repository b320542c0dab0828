from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission

from sessions_app.api.authentication import TenantPrincipal


class IsTenantMember(BasePermission):
    """The request carries a valid key of some tenant; scoping to that tenant is done
    by `TenantAPIView` and the selectors, so an id of another tenant is simply not found."""

    def has_permission(self, request: Any, view: Any) -> bool:
        return isinstance(request.user, TenantPrincipal)
