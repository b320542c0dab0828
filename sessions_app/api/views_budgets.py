"""Period budgets: list, create, read, change, delete. Enforcement is `budget/check`."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.api.representation_budgets import budgets_data
from sessions_app.api.serializers_budgets import SpendBudgetSerializer, SpendBudgetWriteSerializer
from sessions_app.api.tenancy import TenantGenericAPIView
from sessions_app.models import SpendBudget
from sessions_app.selectors.spend_budgets import spend_budget_get
from sessions_app.services.spend_budgets import (
    spend_budget_create,
    spend_budget_delete,
    spend_budget_update,
)

INVALID = OpenApiResponse(description="invalid: `error.fields` names each bad field")
NOT_FOUND = OpenApiResponse(description="not_found: no such budget for this key's tenant")


def _one(budget: SpendBudget) -> dict:
    return SpendBudgetSerializer(budgets_data([budget], at=timezone.now())[0]).data


class SpendBudgetListView(TenantGenericAPIView):
    queryset = SpendBudget.objects.all()
    serializer_class = SpendBudgetSerializer
    openapi_produces = {"POST": {"budget_id": "/id"}}

    @extend_schema(
        summary="The tenant's period budgets, each with its current period",
        responses=SpendBudgetSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        data = budgets_data(list(page or []), at=timezone.now())
        return self.get_paginated_response(SpendBudgetSerializer(data, many=True).data)

    @extend_schema(
        summary="Create a period budget",
        description="A scope (tenant, user, agent, model, user_agent) with the keys it "
        "names, a period in a time zone, limits, and what happens at the limit. "
        "`POST /sessions/{id}/budget/check` enforces every refusing budget that applies.",
        request=SpendBudgetWriteSerializer,
        responses={201: SpendBudgetSerializer, 400: INVALID},
    )
    def post(self, request: Request) -> Response:
        payload = SpendBudgetWriteSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        budget = spend_budget_create(tenant=self.tenant, **payload.validated_data)
        return Response(_one(budget), status=status.HTTP_201_CREATED)


class SpendBudgetDetailView(TenantGenericAPIView):
    serializer_class = SpendBudgetSerializer

    def _budget(self, budget_id: str) -> SpendBudget:
        return spend_budget_get(tenant=self.tenant, budget_id=budget_id)

    @extend_schema(responses={200: SpendBudgetSerializer, 404: NOT_FOUND})
    def get(self, request: Request, budget_id: str) -> Response:
        return Response(_one(self._budget(budget_id)))

    @extend_schema(
        request=SpendBudgetWriteSerializer(partial=True),
        responses={200: SpendBudgetSerializer, 400: INVALID, 404: NOT_FOUND},
    )
    def patch(self, request: Request, budget_id: str) -> Response:
        budget = self._budget(budget_id)
        payload = SpendBudgetWriteSerializer(data=request.data, partial=True)
        payload.is_valid(raise_exception=True)
        budget = spend_budget_update(budget=budget, **payload.validated_data)
        return Response(_one(budget))

    @extend_schema(responses={204: None, 404: NOT_FOUND})
    def delete(self, request: Request, budget_id: str) -> Response:
        spend_budget_delete(budget=self._budget(budget_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
