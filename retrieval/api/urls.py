from django.urls import path

from retrieval.api.readers import ReaderDetailView, ReaderListView
from retrieval.api.views import SearchView

urlpatterns = [
    path("search", SearchView.as_view(), name="search"),
    path("manage/readers", ReaderListView.as_view(), name="reader-list"),
    path("manage/readers/<uuid:reader_id>", ReaderDetailView.as_view(), name="reader-detail"),
]
