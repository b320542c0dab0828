"""Tenant scoping, built once. Every API view derives from these classes: `self.tenant` is
the caller's tenant, and `TenantGenericAPIView.get_queryset` always filters on it, so no
view can forget it. Views that read through selectors pass `self.tenant` to them.

Lists refuse query parameters they do not read, here for all of them: django-filter
ignores an unknown name, so a typo (`?usr_id=alice`) would answer every row of the
tenant, another user's too, as if it had filtered."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from rest_framework import generics
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.views import APIView

from sessions_app.errors import InvalidInput
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
    # What a list reads besides its filters and its pagination (`paginate_queryset`). A
    # comment, not the docstring: drf-spectacular publishes the docstring as the
    # description of every operation of a view that has none of its own.
    list_query_params: tuple[str, ...] = ()

    def get_queryset(self) -> QuerySet[Any]:
        return super().get_queryset().filter(**{self.tenant_field: self.tenant})

    def paginate_queryset(self, queryset: Any) -> Any:
        """Every list pages through here: a query parameter that is not one of the list's
        filters, its pagination or `list_query_params` is a 400 naming it."""
        unknown = sorted(set(self.request.query_params) - self.known_query_params())
        if unknown:
            raise InvalidInput(
                "Unknown query parameter.",
                fields={name: ["Unknown query parameter."] for name in unknown},
            )
        return super().paginate_queryset(queryset)

    def known_query_params(self) -> set[str]:
        known = set(self.list_query_params)
        filterset = getattr(self, "filterset_class", None)
        if filterset is not None:
            known.update(filterset.base_filters)
        if isinstance(self.paginator, CursorPagination):
            known.add(self.paginator.cursor_query_param)
            if self.paginator.page_size_query_param:
                known.add(self.paginator.page_size_query_param)
        return known
