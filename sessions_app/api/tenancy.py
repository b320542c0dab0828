"""Tenant scoping, built once. Every API view derives from these classes: `self.tenant` is
the caller's tenant, and `TenantGenericAPIView.get_queryset` always filters on it, so no
view can forget it. Views that read through selectors pass `self.tenant` to them."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.views import APIView

from sessions_app.models import Tenant


def request_tenant(request: Request) -> Tenant:
    return request.user.tenant  # type: ignore[union-attr]  # checked just above


class TenantAPIView(APIView):
    @property
    def tenant(self) -> Tenant:
        return request_tenant(self.request)


class TenantGenericAPIView(TenantAPIView, generics.GenericAPIView):  # type: ignore[type-arg]  # generic only in the stubs
    """`queryset` is the unscoped base; `tenant_field` names the path to the tenant."""

    tenant_field: str = "tenant"

    def get_queryset(self) -> QuerySet[Any]:
        return super().get_queryset().filter(**{self.tenant_field: self.tenant})
