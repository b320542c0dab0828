"""Tenant scoping, built once. Every API view derives from these classes, and their
`get_queryset` always filters on the caller's tenant, so no view can forget it."""

from __future__ import annotations

from typing import Any

from django.db.models import Model, QuerySet
from rest_framework import generics, viewsets
from rest_framework.request import Request
from rest_framework.views import APIView

from sessions_app.errors import NotFound
from sessions_app.models import Tenant


def request_tenant(request: Request) -> Tenant:
    return request.user.tenant  # type: ignore[union-attr]


class TenantScopedMixin:
    """`queryset` is the unscoped base; `tenant_field` names the path to the tenant."""

    request: Request
    queryset: QuerySet[Any] | None = None
    tenant_field: str = "tenant"

    @property
    def tenant(self) -> Tenant:
        return request_tenant(self.request)

    def get_queryset(self) -> QuerySet[Any]:
        assert self.queryset is not None, f"{type(self).__name__} must set queryset"
        return self.queryset.all().filter(**{self.tenant_field: self.tenant})

    def get_scoped_object(self, model_qs: QuerySet[Any], **lookup: Any) -> Model:
        """Fetch one object of the caller's tenant, or 404 (also for other tenants' ids)."""
        try:
            return model_qs.filter(**{self.tenant_field: self.tenant}).get(**lookup)
        except (model_qs.model.DoesNotExist, ValueError, TypeError) as exc:
            raise NotFound() from exc


class TenantAPIView(TenantScopedMixin, APIView):
    pass


class TenantGenericAPIView(TenantScopedMixin, generics.GenericAPIView):  # type: ignore[type-arg]
    pass


class TenantModelViewSet(TenantScopedMixin, viewsets.ModelViewSet):  # type: ignore[type-arg]
    pass


class TenantReadOnlyViewSet(TenantScopedMixin, viewsets.ReadOnlyModelViewSet):  # type: ignore[type-arg]
    pass
