from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from analytics_app.api.serializers import UsageQuerySerializer, UsageReportSerializer
from analytics_app.selectors.usage import GROUPS, usage_report
from sessions_app.api.tenancy import TenantAPIView

# What DateOrDateTimeField parses, stated so clients (and fuzzers) send only that.
DATE_OR_DATE_TIME = {
    "anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}]
}


class UsageView(TenantAPIView):
    @extend_schema(
        summary="Tokens and cost grouped by day, model, agent, user, step_type or session",
        parameters=[
            OpenApiParameter("group_by", str, enum=list(GROUPS), required=True),
            OpenApiParameter(
                "from",
                DATE_OR_DATE_TIME,
                description="YYYY-MM-DD (from 00:00 UTC) or an ISO 8601 date-time with its "
                "UTC offset (without one: 400), inclusive.",
            ),
            OpenApiParameter(
                "to",
                DATE_OR_DATE_TIME,
                description="YYYY-MM-DD (whole UTC day, inclusive) or an ISO 8601 date-time "
                "with its UTC offset (without one: 400), exclusive.",
            ),
        ],
        responses={
            200: UsageReportSerializer,
            400: OpenApiResponse(description="invalid: bad group_by, dates or window > 366 d"),
        },
    )
    def get(self, request: Request) -> Response:
        query = UsageQuerySerializer(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        report = usage_report(tenant=self.tenant, **query.validated_data)
        return Response(UsageReportSerializer(report).data)
