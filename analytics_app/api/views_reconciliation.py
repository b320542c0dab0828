"""Provider exports in, drift out: `POST /usage/imports`, `GET /usage/reconciliation`."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from analytics_app.api.serializers_reconciliation import (
    PROVIDERS,
    ReconciliationQuerySerializer,
    ReconciliationReportSerializer,
    UsageImportResultSerializer,
    UsageImportSerializer,
)
from analytics_app.selectors.reconciliation import reconciliation_report
from analytics_app.services.reconciliation import provider_usage_import
from sessions_app.api.tenancy import TenantAPIView


class UsageImportView(TenantAPIView):
    @extend_schema(
        summary="Import a provider's usage or cost export for reconciliation",
        description="The whole file is checked before anything is written: a file of the "
        "wrong shape answers 400 naming each value at fault (`export.data.0.results.1."
        "input_tokens`) and imports nothing. Importing a day again replaces it.",
        request=UsageImportSerializer,
        responses={
            201: UsageImportResultSerializer,
            400: OpenApiResponse(description="invalid: `error.fields` names each bad value"),
        },
    )
    def post(self, request: Request) -> Response:
        payload = UsageImportSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        result = provider_usage_import(
            tenant=self.tenant,
            export_format=payload.validated_data["format"],
            document=payload.validated_data["export"],
        )
        return Response(UsageImportResultSerializer(result).data, status=status.HTTP_201_CREATED)


class ReconciliationView(TenantAPIView):
    @extend_schema(
        summary="Engram's tokens and cost against a provider's, per day and model",
        parameters=[
            OpenApiParameter("provider", str, enum=list(PROVIDERS), required=True),
            OpenApiParameter("from", str, description="YYYY-MM-DD, inclusive."),
            OpenApiParameter("to", str, description="YYYY-MM-DD, inclusive."),
        ],
        responses={
            200: ReconciliationReportSerializer,
            400: OpenApiResponse(description="invalid: bad provider, dates or window"),
        },
    )
    def get(self, request: Request) -> Response:
        query = ReconciliationQuerySerializer(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        report = reconciliation_report(tenant=self.tenant, **query.validated_data)
        return Response(ReconciliationReportSerializer(report).data)
