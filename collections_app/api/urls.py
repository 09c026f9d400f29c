from django.urls import path

from collections_app.api import paragraphs, views
from collections_app.api.collection_files import CollectionExportView, CollectionImportDetailView, CollectionImportView
from collections_app.api.corpus_map import CollectionMapView
from collections_app.api.languages import DocumentLanguageView

_DOCUMENT = "collections/<uuid:collection_id>/documents/<uuid:document_id>"

urlpatterns = [
    path("collections", views.CollectionListView.as_view(), name="collection-list"),
    # Before collections/<uuid>: "import" is no uuid, but the order says which is meant.
    path("collections/import", CollectionImportView.as_view(), name="collection-import"),
    path("collections/<uuid:collection_id>/export", CollectionExportView.as_view(), name="collection-export"),
    path(
        "collections/<uuid:collection_id>/import", CollectionImportDetailView.as_view(), name="collection-import-read"
    ),
    path(
        "collections/<uuid:collection_id>",
        views.CollectionDetailView.as_view(),
        name="collection-detail",
    ),
    path(
        "collections/<uuid:collection_id>/documents",
        views.DocumentListView.as_view(),
        name="document-list",
    ),
    path(
        "collections/<uuid:collection_id>/documents/<uuid:document_id>",
        views.DocumentDetailView.as_view(),
        name="document-detail",
    ),
    path(
        "collections/<uuid:collection_id>/documents/<uuid:document_id>/versions",
        views.DocumentVersionListView.as_view(),
        name="document-versions",
    ),
    path(
        "collections/<uuid:collection_id>/documents/<uuid:document_id>/versions/<int:number>/original",
        views.DocumentVersionOriginalView.as_view(),
        name="document-version-original",
    ),
    path(
        "collections/<uuid:collection_id>/documents/<uuid:document_id>/ingest-options",
        views.DocumentIngestOptionsView.as_view(),
        name="document-ingest-options",
    ),
    path(
        "collections/<uuid:collection_id>/documents/<uuid:document_id>/labels",
        views.DocumentLabelsView.as_view(),
        name="document-labels",
    ),
    path(
        "collections/<uuid:collection_id>/documents/<uuid:document_id>/chunk-preview",
        views.DocumentChunkPreviewView.as_view(),
        name="document-chunk-preview",
    ),
    path(
        "collections/<uuid:collection_id>/documents/<uuid:document_id>/rechunk",
        views.DocumentRechunkView.as_view(),
        name="document-rechunk",
    ),
    path(
        "collections/<uuid:collection_id>/reindex",
        views.CollectionReindexView.as_view(),
        name="collection-reindex",
    ),
    path("collections/<uuid:collection_id>/map", CollectionMapView.as_view(), name="collection-map"),
    path("collections/<uuid:collection_id>/trash", views.TrashListView.as_view(), name="trash-list"),
    path(
        "collections/<uuid:collection_id>/trash/<uuid:document_id>",
        views.TrashDocumentView.as_view(),
        name="trash-document",
    ),
    path(
        "collections/<uuid:collection_id>/trash/<uuid:document_id>/restore",
        views.TrashRestoreView.as_view(),
        name="trash-restore",
    ),
    path(
        "collections/<uuid:collection_id>/builds",
        views.BuildListView.as_view(),
        name="build-list",
    ),
    path(
        "collections/<uuid:collection_id>/documents/<uuid:document_id>/language",
        DocumentLanguageView.as_view(),
        name="document-language",
    ),
    path(f"{_DOCUMENT}/paragraphs", paragraphs.ParagraphListView.as_view(), name="paragraph-list"),
    path(
        f"{_DOCUMENT}/paragraphs/<uuid:paragraph_id>", paragraphs.ParagraphDetailView.as_view(), name="paragraph-detail"
    ),
    path(
        f"{_DOCUMENT}/paragraphs/<uuid:paragraph_id>/split",
        paragraphs.ParagraphSplitView.as_view(),
        name="paragraph-split",
    ),
    path(
        f"{_DOCUMENT}/paragraphs/<uuid:paragraph_id>/merge-next",
        paragraphs.ParagraphMergeNextView.as_view(),
        name="paragraph-merge-next",
    ),
    path(f"{_DOCUMENT}/paragraph-edits", paragraphs.ParagraphEditListView.as_view(), name="paragraph-edit-list"),
    path(
        f"{_DOCUMENT}/paragraph-edits/<uuid:edit_id>/revert",
        paragraphs.ParagraphEditRevertView.as_view(),
        name="paragraph-edit-revert",
    ),
    path(
        f"{_DOCUMENT}/paragraph-edits/<uuid:edit_id>/reapply",
        paragraphs.ParagraphEditReapplyView.as_view(),
        name="paragraph-edit-reapply",
    ),
    path(
        f"{_DOCUMENT}/paragraph-edits/<uuid:edit_id>/discard",
        paragraphs.ParagraphEditDiscardView.as_view(),
        name="paragraph-edit-discard",
    ),
]
