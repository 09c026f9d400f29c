"""Admin: documents — upload, status while ingesting, the stored original, re-ingest and the tool pages."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db.models import Count
from django.urls import reverse
from django.utils.html import format_html

from collections_app.admin.base import TenantScopedAdmin
from collections_app.admin.column_roles import ColumnRolesAdminMixin
from collections_app.admin.ocr import OcrAdminMixin, scanned_text_field, scanned_text_langs
from collections_app.admin.sources import ArchiveUploadAdminMixin, AttachmentsAdminMixin
from collections_app.ingestion import UnsupportedFile, check_upload
from collections_app.ingestion.formats import family_of
from collections_app.models import Document
from collections_app.services.documents import document_create, document_delete, document_queue_ingest, upload_filename
from collections_app.validation import source_uri_problem


class DocumentUploadForm(forms.ModelForm):
    upload = forms.FileField(
        help_text="The file to ingest (.pdf .docx .html .md .txt ...); a .zip imports each file in it."
    )
    source_uri = forms.CharField(
        required=False,
        max_length=1000,
        help_text="Where it came from: upload://, http(s):// or mailto: (default upload://<filename>).",
    )
    scanned_text_language = scanned_text_field()

    class Meta:
        model = Document
        fields = ["collection"]

    def clean_upload(self):  # type: ignore[no-untyped-def]
        # The whole file, as document_create reads it: a ZIP package (.docx, .xlsx, .pptx, .odt) keeps its
        # directory at the end, so a check of the first bytes alone refused every real one over 8 KiB.
        upload = self.cleaned_data["upload"]
        limit = settings.KB_MAX_UPLOAD_BYTES
        if upload.size > limit:
            raise forms.ValidationError(f"{upload.name} is larger than the upload limit of {limit} bytes")
        try:
            check_upload(upload_filename(upload.name), upload.read(limit + 1))
        except UnsupportedFile as exc:
            raise forms.ValidationError(str(exc)) from exc
        finally:
            upload.seek(0)
        return upload

    def clean_source_uri(self) -> str:
        value = self.cleaned_data.get("source_uri", "")
        problem = source_uri_problem(value) if value else None  # as the API: collections_app/validation.py
        if problem:
            raise forms.ValidationError(f"The source {problem}.")
        return value

    def clean_scanned_text_language(self) -> list[str]:
        return scanned_text_langs(self.cleaned_data.get("scanned_text_language", ""))

    def clean(self):  # type: ignore[no-untyped-def]
        data = super().clean() or self.cleaned_data
        upload = data.get("upload")
        if upload is not None and family_of(upload.name) == "archive" and data.get("scanned_text_language"):
            self.add_error(
                "scanned_text_language",
                "A .zip import takes no OCR language: its files are read with the defaults. "
                "Upload a scan on its own to choose its language.",
            )
        return data

    def ingest_options(self) -> dict:
        langs = self.cleaned_data.get("scanned_text_language")
        return {"tesseract_langs": langs} if langs else {}


@admin.register(Document)
class DocumentAdmin(
    ArchiveUploadAdminMixin, AttachmentsAdminMixin, OcrAdminMixin, ColumnRolesAdminMixin, TenantScopedAdmin
):
    list_display = ["filename", "collection", "status", "progress", "language", "chunk_count", "updated_at"]
    list_filter = ["status", "collection__tenant", "collection"]
    list_select_related = ["collection"]
    search_fields = ["filename", "source_uri"]
    actions = ["reingest"]
    readonly_fields = [
        "collection", "filename", "source_uri", "attached_to", "attachment_links", "status", "progress", "error",
        "warnings", "paragraphs", "language", "metadata", "ocr_languages", "column_roles", "size", "content_hash",
        "uploaded_by", "created_at", "updated_at",
    ]  # fmt: skip
    exclude = ["file", "blocks", "tenant", "parent", "ingest_options"]

    def get_queryset(self, request):  # type: ignore[no-untyped-def]
        return super().get_queryset(request).annotate(chunk_count=Count("chunks"))

    @admin.display(description="paragraphs")
    def paragraphs(self, obj: Document) -> str:
        # The document's paragraphs, in the read-only chunk list filtered to it.
        url = reverse("admin:collections_app_chunk_changelist") + f"?document__id__exact={obj.pk}"
        return format_html('<a href="{}">{} paragraph(s)</a>', url, obj.chunks.count())

    @admin.display(ordering="chunk_count", description="paragraphs")
    def chunk_count(self, obj: Document) -> int:
        return obj.chunk_count  # type: ignore[attr-defined]

    def get_form(self, request, obj=None, change=False, **kwargs):  # type: ignore[no-untyped-def]
        if obj is None:
            kwargs["form"] = DocumentUploadForm
            kwargs["fields"] = ["collection", "upload", "source_uri", "scanned_text_language"]
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request, obj=None):  # type: ignore[no-untyped-def]
        return self.readonly_fields if obj is not None else []

    def get_exclude(self, request, obj=None):  # type: ignore[no-untyped-def]
        return self.exclude if obj is not None else []

    def save_model(self, request, obj, form, change):  # type: ignore[no-untyped-def]
        if change:
            return
        upload = form.cleaned_data["upload"]
        if family_of(upload.name) == "archive":
            return self.save_archive(request, obj, form)  # each member a document: sources.py
        result = document_create(
            collection=form.cleaned_data["collection"],
            filename=upload.name,
            content=upload,
            source_uri=form.cleaned_data.get("source_uri", ""),
            uploaded_by=request.user.get_username(),
            ingest_options=form.ingest_options(),
        )
        # The admin redirects to the saved object: point it at the stored document.
        obj.pk, obj._state.adding = result.document.pk, False
        if not result.created:
            self.message_user(request, f"This content is already held as {result.document.filename}.", messages.INFO)

    def delete_model(self, request, obj):  # type: ignore[no-untyped-def]
        document_delete(document=obj)  # its attachments and stored originals go too

    def delete_queryset(self, request, queryset):  # type: ignore[no-untyped-def]
        for document in queryset:
            document_delete(document=document)

    @admin.action(description="Re-ingest the selected documents", permissions=["change"])
    def reingest(self, request, queryset):  # type: ignore[no-untyped-def]
        documents = list(self.manageable(request, queryset))  # a viewer's tenants' rows are left alone
        for document in documents:
            document_queue_ingest(document=document)
        self.message_user(request, f"{len(documents)} document(s) queued for ingestion.")
        if skipped := queryset.count() - len(documents):
            self.message_user(request, f"{skipped} document(s) left alone: you may only view them.", messages.WARNING)
