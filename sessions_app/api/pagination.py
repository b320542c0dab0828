from rest_framework.pagination import CursorPagination


class CreatedCursorPagination(CursorPagination):
    """Cursor pagination, stable under inserts; newest first unless a view says otherwise."""

    ordering = "-created_at"
    page_size_query_param = "page_size"
    max_page_size = 500
