from django.urls import path

from memory_app.api import views, views_relations

urlpatterns = [
    path("memories", views.MemoryListView.as_view(), name="memory-list"),
    path("memories/bulk", views.MemoryBulkView.as_view(), name="memory-bulk"),
    path("memories/search", views.MemorySearchView.as_view(), name="memory-search"),
    path("memories/<str:memory_id>", views.MemoryDetailView.as_view(), name="memory-detail"),
    path(
        "memories/<str:memory_id>/history",
        views.MemoryHistoryView.as_view(),
        name="memory-history",
    ),
    path("memories/<str:memory_id>/revert", views.MemoryRevertView.as_view(), name="memory-revert"),
    path(
        "memories/<str:memory_id>/relations",
        views_relations.MemoryRelationListView.as_view(),
        name="memory-relations",
    ),
    path(
        "memories/<str:memory_id>/relations/<int:relation_id>",
        views_relations.MemoryRelationDetailView.as_view(),
        name="memory-relation-detail",
    ),
]
