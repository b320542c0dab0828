from __future__ import annotations

import django_filters

from sessions_app.models import ChatSession, SessionStatus


class SessionFilter(django_filters.FilterSet):
    user_id = django_filters.CharFilter(help_text="Only this user's sessions.")
    agent_id = django_filters.CharFilter(help_text="Only this agent's sessions.")
    status = django_filters.ChoiceFilter(choices=SessionStatus.choices)
    external_session_id = django_filters.CharFilter()
    runaway = django_filters.BooleanFilter(
        field_name="runaway_at",
        lookup_expr="isnull",
        exclude=True,
        help_text="true: only sessions flagged as runaway.",
    )

    class Meta:
        model = ChatSession
        fields = ["user_id", "agent_id", "status", "external_session_id", "runaway"]
