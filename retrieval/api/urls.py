from django.urls import path

from retrieval.api.judges import CollectionJudgeView
from retrieval.api.readers import ReaderDetailView, ReaderListView
from retrieval.api.views import SearchView

urlpatterns = [
    path("search", SearchView.as_view(), name="search"),
    path("manage/readers", ReaderListView.as_view(), name="reader-list"),
    path("manage/readers/<uuid:reader_id>", ReaderDetailView.as_view(), name="reader-detail"),
    path("manage/collections/<uuid:collection_id>/judge", CollectionJudgeView.as_view(), name="collection-judge"),
]
