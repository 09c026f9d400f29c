from django.urls import path

from retrieval.api.citations import CitationsVerifyView
from retrieval.api.gaps import GapDismissView, GapListView
from retrieval.api.golden import (
    EvaluateView,
    EvaluationDetailView,
    EvaluationListView,
    GoldenBeirView,
    GoldenDetailView,
    GoldenJsonlView,
    GoldenListView,
)
from retrieval.api.judges import CollectionJudgeView
from retrieval.api.measure import MeasureApplyView, MeasureCancelView, MeasureDetailView, MeasureView
from retrieval.api.readers import ReaderDetailView, ReaderListView
from retrieval.api.views import SearchView

urlpatterns = [
    path("search", SearchView.as_view(), name="search"),
    path("citations/verify", CitationsVerifyView.as_view(), name="citations-verify"),
    path("manage/readers", ReaderListView.as_view(), name="reader-list"),
    path("manage/readers/<uuid:reader_id>", ReaderDetailView.as_view(), name="reader-detail"),
    path("manage/collections/<uuid:collection_id>/judge", CollectionJudgeView.as_view(), name="collection-judge"),
    path("manage/collections/<uuid:collection_id>/golden", GoldenListView.as_view(), name="golden-list"),
    path("manage/collections/<uuid:collection_id>/golden/jsonl", GoldenJsonlView.as_view(), name="golden-jsonl"),
    path("manage/collections/<uuid:collection_id>/golden/beir", GoldenBeirView.as_view(), name="golden-beir"),
    path(
        "manage/collections/<uuid:collection_id>/golden/<uuid:golden_id>",
        GoldenDetailView.as_view(),
        name="golden-detail",
    ),
    path("manage/collections/<uuid:collection_id>/gaps", GapListView.as_view(), name="collection-gaps"),
    path(
        "manage/collections/<uuid:collection_id>/gaps/dismiss", GapDismissView.as_view(), name="collection-gaps-dismiss"
    ),
    path("manage/collections/<uuid:collection_id>/evaluate", EvaluateView.as_view(), name="collection-evaluate"),
    path("manage/collections/<uuid:collection_id>/evaluations", EvaluationListView.as_view(), name="evaluation-list"),
    path(
        "manage/collections/<uuid:collection_id>/evaluations/<uuid:evaluation_id>",
        EvaluationDetailView.as_view(),
        name="evaluation-detail",
    ),
    path("manage/collections/<uuid:collection_id>/measure", MeasureView.as_view(), name="collection-measure"),
    path(
        "manage/collections/<uuid:collection_id>/measure/<uuid:measure_id>",
        MeasureDetailView.as_view(),
        name="measure-detail",
    ),
    path(
        "manage/collections/<uuid:collection_id>/measure/<uuid:measure_id>/cancel",
        MeasureCancelView.as_view(),
        name="measure-cancel",
    ),
    path(
        "manage/collections/<uuid:collection_id>/measure/<uuid:measure_id>/apply",
        MeasureApplyView.as_view(),
        name="measure-apply",
    ),
]
