from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
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
        description="Steps count by when they were recorded (`created_at`), in the window "
        "and in `group_by=day`, not by their turn's `occurred_at`: spend happens when a "
        "call is reported, period budgets count it then, and a backfilled turn of last "
        "month is today's spend here and in the budgets alike. `user_id`, `agent_id` and "
        "`session_id` keep only those steps; a filter the rollups do not key (`user_id` "
        "beside any grouping but user, `agent_id` beside user, any `session_id`) is "
        "answered from the steps themselves.",
        parameters=[
            OpenApiParameter("group_by", str, enum=list(GROUPS), required=True),
            OpenApiParameter("user_id", str, description="Only this user's steps."),
            OpenApiParameter("agent_id", str, description="Only this agent's steps."),
            OpenApiParameter(
                "session_id", OpenApiTypes.UUID, description="Only this session's steps."
            ),
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
            400: OpenApiResponse(
                description="invalid: bad group_by, dates, window > 366 d, or a filter "
                "(blank, too long, a session_id that is no UUID)"
            ),
        },
    )
    def get(self, request: Request) -> Response:
        query = UsageQuerySerializer(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        report = usage_report(tenant=self.tenant, **query.validated_data)
        return Response(UsageReportSerializer(report).data)
