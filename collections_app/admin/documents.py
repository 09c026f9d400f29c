"""Admin: documents — upload, status while ingesting, the stored original, re-ingest and the tool pages."""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.models import LogEntry
from django.contrib.admin.utils import unquote
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import Model, QuerySet
from django.http import FileResponse, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.dateformat import format as date_format
from django.utils.html import escape, format_html, format_html_join
from django.utils.text import Truncator
from django.utils.timezone import localtime
from django_q.models import Task

from collections_app.admin.column_roles import ColumnRolesAdminMixin
from collections_app.admin.document_language import DocumentLanguageAdminMixin
from collections_app.admin.ocr import OcrAdminMixin, scanned_text_field, scanned_text_langs
from collections_app.admin.paragraphs import DocumentParagraphsAdminMixin
from collections_app.admin.preview import PreviewAdminMixin
from collections_app.admin.reader_labels import DocumentLabelsAdminMixin
from collections_app.admin.reindex import StaleAdminMixin, stale_badge
from collections_app.admin.sources import ArchiveUploadAdminMixin, AttachmentsAdminMixin
from collections_app.admin.trash import TrashAdminMixin
from collections_app.admin.upload_metadata import (
    METADATA_JSON_FIELD,
    metadata_form_fields,
    metadata_given,
    metadata_json_field,
    upload_collection_id,
)
from collections_app.admin.version_diff import VersionDiffAdminMixin, versions_diff_url
from collections_app.models import DOCUMENT_IN_FLIGHT, Collection, Document, DocumentStatus, DocumentVersion
from collections_app.selectors import UNLISTED_DOCUMENT_COLUMNS, UNSHOWN_DOCUMENT_COLUMNS, document_versions_for
from collections_app.services.documents import (
    FileTooLarge,
    document_create,
    document_queue_ingest,
    document_version_problem,
    upload_filename,
)
from collections_app.services.metadata_schema import InvalidMetadata, upload_metadata_check
from doors.admin.base import TenantScopedAdmin, ToolPage, object_for_tool
from doors.admin.display import key_value_rows, readable_size, status_badge, table
from infra.errors import DomainError
from infra.validation import source_uri_problem
from ingestion import UnsupportedFile, check_upload
from ingestion.formats import family_of
from ingestion.languages import language_shown as language_label


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one input: cleans to the list of files, each checked as one FileField checks it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[Any]:
        files = [f for f in (data if isinstance(data, list | tuple) else [data]) if f]
        if not files and self.required:
            raise forms.ValidationError(self.error_messages["required"], code="required")
        return [super(MultipleFileField, self).clean(f, initial) for f in files]


class DocumentUploadForm(forms.ModelForm):
    upload = MultipleFileField(
        help_text="One file or several at once (.pdf .docx .html .md .txt ...); each becomes a document, a .zip "
        "imports each file in it. What happened to each file is said file by file."
    )
    source_uri = forms.CharField(
        required=False,
        max_length=1000,
        help_text="Where it came from: upload://, http(s):// or mailto: (default upload://<filename>). "
        "One file only: several files each get upload://<their name>.",
    )
    scanned_text_language = scanned_text_field()
    replace = forms.BooleanField(
        required=False,
        initial=True,
        label="Replace a document of the same name",
        help_text="A changed file under the name (or source) of a document of the collection becomes its next "
        "version; the old one answers until the new one is read. Untick to keep both as separate documents.",
    )

    metadata = metadata_json_field()

    # The schema of the collection the page is for (DocumentAdmin.get_form): a field per column it declares.
    metadata_schema: dict = {}

    class Meta:
        model = Document
        fields = ["collection"]

    class Media:
        js = ["kbsite/admin/upload_metadata.js"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields.update(metadata_form_fields(self.metadata_schema))

    def clean_upload(self) -> list[UploadedFile]:
        """Each file checked whole, as document_create reads it. A file that fails is refused by name; with
        several files the others still go (save_model reports the refused ones), with one the form says why."""
        uploads = self.cleaned_data["upload"]
        self.refused: list[tuple[str, str]] = []
        kept = []
        for upload in uploads:
            problem = upload_problem(upload)
            if problem:
                self.refused.append((upload.name, problem))
            else:
                kept.append(upload)
        if not kept:
            raise forms.ValidationError(
                [problem if len(uploads) == 1 else f"{name}: {problem}" for name, problem in self.refused]
            )
        return kept

    def clean_source_uri(self) -> str:
        value = self.cleaned_data.get("source_uri", "")
        problem = source_uri_problem(value) if value else None  # as the API: infra/validation.py
        if problem:
            raise forms.ValidationError(f"The source {problem}.")
        return value

    def clean_scanned_text_language(self) -> list[str]:
        return scanned_text_langs(self.cleaned_data.get("scanned_text_language", ""))

    def clean(self) -> dict[str, Any]:
        data = super().clean() or self.cleaned_data
        uploads = data.get("upload") or []
        if len(uploads) + len(getattr(self, "refused", [])) > 1 and data.get("source_uri"):
            self.add_error(
                "source_uri",
                "A source names one file: leave it empty to upload several files (each gets upload://<its name>), "
                "or upload the file with a source on its own.",
            )
        if any(family_of(u.name) == "archive" for u in uploads) and data.get("scanned_text_language"):
            self.add_error(
                "scanned_text_language",
                "A .zip import takes no OCR language: its files are read with the defaults. "
                "Upload a scan on its own to choose its language.",
            )
        collection = data.get("collection")
        if collection is not None and data.get("replace"):
            # Said beside the file rather than as an error page: the document it would be a version of is being
            # read, or several documents have its name (the API answers 409). With several files, that file
            # alone is refused and the others go.
            kept = []
            for upload in uploads:
                problem = family_of(upload.name) != "archive" and document_version_problem(
                    collection_id=collection.pk,
                    filename=upload_filename(upload.name),
                    source_uri=data.get("source_uri", ""),
                )
                if not problem:
                    kept.append(upload)
                elif len(uploads) == 1:
                    self.add_error("upload", problem.replace('send "replace": false', 'untick "Replace"'))
                else:
                    self.refused.append((upload.name, problem.replace('send "replace": false', 'untick "Replace"')))
            if uploads and not kept and len(uploads) > 1:
                self.add_error("upload", [f"{name}: {problem}" for name, problem in self.refused])
            data["upload"] = kept
        self._clean_metadata(data, uploads, collection)
        return data

    def _clean_metadata(self, data: dict, uploads: list, collection: Collection | None) -> None:
        """The values of the metadata fields, checked as the upload service checks them (the same for each file)."""
        given, problem = metadata_given(data, self.metadata_schema)
        data["metadata_values"] = None
        if problem:
            self.add_error(METADATA_JSON_FIELD, problem)
            return
        if given is None or collection is None:
            return
        if any(family_of(u.name) == "archive" for u in uploads):
            self.add_error(
                METADATA_JSON_FIELD, "A .zip import takes no metadata: upload its files on their own to give them some."
            )
            return
        try:
            data["metadata_values"] = upload_metadata_check(schema=collection.metadata_schema or {}, metadata=given)
        except InvalidMetadata as exc:
            self.add_error(METADATA_JSON_FIELD, str(exc))

    def ingest_options(self) -> dict:
        langs = self.cleaned_data.get("scanned_text_language")
        return {"tesseract_langs": langs} if langs else {}


def upload_problem(upload: UploadedFile) -> str:
    """Why an uploaded file cannot be taken ("" when it can): over the size limit, or its content contradicts
    its name. The whole file, as document_create reads it: a ZIP package (.docx, .xlsx, .pptx, .odt) keeps its
    directory at the end, so a check of the first bytes alone refused every real one over 8 KiB."""
    limit = settings.KB_MAX_UPLOAD_BYTES
    if (upload.size or 0) > limit:
        return f"{upload.name} is larger than the upload limit of {limit} bytes"
    try:
        check_upload(upload_filename(upload.name or ""), upload.read(limit + 1))
    except UnsupportedFile as exc:
        return str(exc)
    finally:
        upload.seek(0)
    return ""


# Paragraphs previewed on a document's page; the rest are one click away in the paragraphs list.
INLINE_PARAGRAPHS = 3
# Families read by OCR (Tesseract): only their documents offer OCR options.
OCR_FAMILIES = {"image", "pdf"}
# Why an imported document has no size and no "Download original".
IMPORTED_NOTE = "it was imported from a collection file, which brings a document's paragraphs, not its file."


def document_can_reingest(document: Document) -> bool:
    """Whether a re-ingest has anything to read: the original, or the stored parser output (all an imported
    document has; the column is deferred on the admin's rows, so it is asked for, not loaded)."""
    return document.has_original or Document.objects.filter(pk=document.pk, blocks__isnull=False).exists()


def document_reingest_reads(document: Document) -> str:
    """What a re-ingest of `document` really reads, in the words of its confirmation page (services/documents:
    the stored parser output when there is one, else the original parsed again)."""
    if not document.has_original:
        return (
            "the paragraphs it was imported with (it has no original file: it came from a collection file), cut "
            "again and embedded again"
        )
    return "what the parser read from its original (kept, so it is not parsed again), cut again and embedded again"


class DocumentChangeList(ChangeList):
    """The documents list (and its actions): rows without the JSON columns it shows nothing of, a large
    document's megabytes among them."""

    def get_queryset(
        self, request: HttpRequest, exclude_parameters: list[str | None] | None = None
    ) -> QuerySet[Document]:
        return super().get_queryset(request, exclude_parameters).defer(*UNLISTED_DOCUMENT_COLUMNS)


@admin.register(Document)
class DocumentAdmin(
    TrashAdminMixin,
    DocumentParagraphsAdminMixin,
    DocumentLanguageAdminMixin,
    DocumentLabelsAdminMixin,
    ArchiveUploadAdminMixin,
    AttachmentsAdminMixin,
    OcrAdminMixin,
    ColumnRolesAdminMixin,
    PreviewAdminMixin,
    StaleAdminMixin,
    VersionDiffAdminMixin,
    TenantScopedAdmin,
):
    # Eight columns, so the list fits 1,280 px beside the navigation (kb_admin.css puts its filters above it):
    # status, progress and stale share one cell, the date is short, long names and errors wrap.
    list_display = [
        "filename", "collection", "state_shown", "error_shown", "language_shown", "chunk_count_shown", "size_shown",
        "updated_shown",
    ]  # fmt: skip
    list_filter = ["status", "stale", "collection__tenant", "collection"]
    list_select_related = ["collection"]
    search_fields = ["filename", "source_uri"]
    actions = ["reingest", "delete_selected"]  # delete_selected: TrashAdminMixin's, to the trash
    readonly_fields = [
        "collection", "filename", "status_shown", "progress_shown", "stale_shown", "error", "size_shown",
        "language_shown", "uploaded_by", "source_uri", "created_at", "updated_at", "paragraphs", "first_paragraphs",
        "ocr_languages", "column_roles", "attached_to", "attachment_links", "warnings_shown", "metadata_shown",
        "content_hash", "versions_shown",
    ]  # fmt: skip

    def get_queryset(self, request: HttpRequest) -> QuerySet[Document]:
        # No page of the admin shows a document's parser output (the preview reads its first blocks itself),
        # and `chunk_count` is stored (kept by triggers), not counted per row: a large document's page, its
        # tools and the list cost what a small one's do.
        return super().get_queryset(request).defer(*UNSHOWN_DOCUMENT_COLUMNS)

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return DocumentChangeList

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Document | None:
        # The document's page asks for its document once per mixin (tools, language, labels, paragraphs) and
        # again in Django's own view: read it once per GET. Anything that writes reads it afresh.
        if request.method != "GET":
            return super().get_object(request, object_id, from_field)
        read = request.__dict__.setdefault("_kb_documents", {})
        if (object_id, from_field) not in read:
            read[object_id, from_field] = super().get_object(request, object_id, from_field)
        return read[object_id, from_field]

    # --- the page of one document: read-only, with its tools ------------------------------------------

    def get_fieldsets(self, request: HttpRequest, obj: Document | None = None) -> Any:
        if obj is None:
            return [
                (None, {"fields": ["collection", "upload", "source_uri", "scanned_text_language", "replace"]}),
                self.upload_metadata_fieldset(request),
            ]
        options = [
            *(["ocr_languages"] if family_of(obj.filename) in OCR_FAMILIES else []),
            *(["column_roles"] if obj.ingest_options.get("columns") else []),
        ]
        return [
            (None, {"fields": ["filename", "collection", "status_shown", "progress_shown", "stale_shown", "error",
                               "size_shown", "language_shown", "uploaded_by", "source_uri", "created_at",
                               "updated_at"]}),
            ("Paragraphs", {"fields": ["paragraphs", "first_paragraphs"]}),
            ("Versions", {"fields": ["versions_shown"]}),
            *([("Reading options", {"fields": options})] if options else []),
            ("Details", {"classes": ["collapse"], "fields": ["attached_to", "attachment_links", "warnings_shown",
                                                              "metadata_shown", "content_hash"]}),
        ]  # fmt: skip

    def get_form(
        self, request: HttpRequest, obj: Document | None = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm[Document]]:
        if obj is None:
            collection = self.upload_collection(request)
            schema = (collection.metadata_schema or {}) if collection else {}
            kwargs["form"] = type("DocumentUploadForm", (DocumentUploadForm,), {"metadata_schema": schema})
            kwargs["fields"] = ["collection", "upload", "source_uri", "scanned_text_language", "replace"]
        else:
            kwargs["fields"] = []  # every field of a stored document is read-only here
        return super().get_form(request, obj, change=change, **kwargs)

    def upload_collection(self, request: HttpRequest) -> Collection | None:
        """The collection the upload form is for (upload_metadata.py), among those this person may upload to."""
        if not hasattr(request, "_kb_upload_collection"):
            chosen, found = upload_collection_id(request), None
            if _is_uuid(chosen):
                scoped = self.scoped_choices(Collection, request)  # None: a superuser, who may upload anywhere
                found = (Collection.objects.all() if scoped is None else scoped).filter(pk=chosen).first()
            request._kb_upload_collection = found  # type: ignore[attr-defined]
        return request._kb_upload_collection  # type: ignore[attr-defined]

    def upload_metadata_fieldset(self, request: HttpRequest) -> tuple[str, dict]:
        collection = self.upload_collection(request)
        schema = (collection.metadata_schema or {}) if collection else {}
        # The admin prints a fieldset's description as HTML: the collection's name is escaped.
        described: str = "Choose the collection first for a field per metadata column it declares."
        if schema:
            described = escape(f"Values for the metadata columns of {collection}, given to every file of this upload.")
        elif collection:
            described = escape(f"{collection} declares no metadata columns yet: values given here declare them.")
        fields = [*metadata_form_fields(schema), METADATA_JSON_FIELD]
        return ("Metadata", {"fields": fields, "description": described})

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        initial = super().get_changeform_initial_data(request)
        if "collection" not in initial and (collection := self.upload_collection(request)) is not None:
            initial["collection"] = str(collection.pk)  # the documents list's filter, carried by its "Add" button
        return initial

    def get_readonly_fields(self, request: HttpRequest, obj: Document | None = None) -> list[str] | tuple[str, ...]:
        return self.readonly_fields if obj is not None else []

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        # Nothing on this page is saved: no Save buttons, and a POST (an old form, a double click) changes
        # nothing and says nothing. Changes go through the tools (re-ingest, OCR, column roles).
        if request.method == "POST":
            return HttpResponseRedirect(request.path)
        document = self.get_object(request, unquote(object_id))
        context: dict[str, object] = {
            "show_save": False,
            "show_save_and_continue": False,
            "show_save_and_add_another": False,
            "title": "Document",  # not "Change document": nothing here is edited in place
        }
        if document is not None:
            context["kb_tools"] = self.document_tools(request, document)
            context["ingestion_task"] = ingestion_task(document, link=request.user.is_superuser)
        return super().change_view(request, object_id, form_url, {**context, **(extra_context or {})})

    def document_tools(self, request: HttpRequest, document: Document) -> list[tuple[str, str]]:
        """The buttons above the page: (label, url)."""
        site = self.admin_site.name
        tools = []
        if self.has_change_permission(request, document) and document_can_reingest(document):
            tools.append(("Re-ingest", reverse(f"{site}:collections_app_document_reingest", args=[document.pk])))
        if document.has_original:  # an imported document has none: no button that can only fail
            tools.append(
                ("Download original", reverse(f"{site}:collections_app_document_download", args=[document.pk]))
            )
        tools += [
            ("Paragraphs", _chunks_url(document)),
            ("Preview chunking", reverse(f"{site}:collections_app_document_preview", args=[document.pk])),
            ("Builds", reverse(f"{site}:collections_app_build_changelist") + f"?document__id__exact={document.pk}"),
        ]
        return tools

    # --- columns and fields -----------------------------------------------------------------------------

    @admin.display(ordering="status", description="status")
    def status_shown(self, obj: Document) -> str:
        return _live(obj, "status", status_badge(obj.status))

    @admin.display(ordering="progress", description="progress")
    def progress_shown(self, obj: Document) -> str:
        if obj.status == DocumentStatus.ERROR:
            shown = "—"  # an errored document did not get 100 % of the way
        elif obj.status == DocumentStatus.DONE:
            shown = "100%"
        elif obj.status == DocumentStatus.QUEUED:
            shown = "waiting for a worker"  # not "0 %": nothing has started reading it
        else:
            shown = format_html('<progress max="100" value="{}"></progress> {}%', obj.progress, obj.progress)
        return _live(obj, "progress", shown)

    @admin.display(ordering="status", description="status")
    def state_shown(self, obj: Document) -> str:
        """The list's status cell: the status and its progress (each refreshed live), and whether it is stale."""
        stale = format_html(" {}", stale_badge(True)) if obj.stale else ""
        return format_html("{} {}{}", self.status_shown(obj), self.progress_shown(obj), stale)

    @admin.display(description="error")
    def error_shown(self, obj: Document) -> str:
        if not obj.error:
            return _live(obj, "error", "")
        # The start of it in the list; all of it on hover and on the document's page.
        return _live(obj, "error", format_html('<span title="{}">{}</span>', obj.error, Truncator(obj.error).chars(80)))

    @admin.display(ordering="updated_at", description="updated")
    def updated_shown(self, obj: Document) -> str:
        # The date over its time when the column is narrow, never broken inside either.
        when = localtime(obj.updated_at)
        return format_html(
            '<span class="nowrap">{}</span> <span class="nowrap">{}</span>', date_format(when, "Y-m-d"),
            date_format(when, "H:i"),
        )  # fmt: skip

    @admin.display(ordering="language", description="language")
    def language_shown(self, obj: Document) -> str:
        return _live(obj, "language", language_label(obj.language))

    # Not named chunk_count: a list column of a model field's name shows the bare field, not this live cell.
    @admin.display(ordering="chunk_count", description="paragraphs")
    def chunk_count_shown(self, obj: Document) -> str:
        return _live(obj, "paragraphs", obj.chunk_count)

    @admin.display(ordering="size", description="size")
    def size_shown(self, obj: Document) -> str:
        if not obj.has_original:
            # Not "0 bytes": there is no file at all, only the paragraphs a collection file brought.
            return format_html('<span class="kb-no-original" title="{}">—</span> no original (imported)', IMPORTED_NOTE)
        return readable_size(obj.size)

    @admin.display(description="paragraphs")
    def paragraphs(self, obj: Document) -> str:
        return format_html('<a href="{}">{} paragraph(s)</a>', _chunks_url(obj), obj.chunk_count)

    @admin.display(description="first paragraphs")
    def first_paragraphs(self, obj: Document) -> str:
        # In the order of the places' unique index (document, generation, ordinal): three rows read, not every
        # row of the document sorted by ordinal. Only while a re-index stages a generation does it matter: the
        # generation searches read comes first.
        paragraphs = (
            obj.chunks.filter(position__document=obj)
            .order_by("position__generation", "position__ordinal")
            .values_list("section", "page", "text")
        )
        first = list(paragraphs[:INLINE_PARAGRAPHS])
        if not first:
            return "—"
        return format_html_join(
            "",
            '<div class="kb-paragraph"><div class="kb-paragraph-where">{}</div><p>{}</p></div>',
            (
                (" › ".join(section) + (f" (page {page})" if page else ""), Truncator(text).chars(600))
                for section, page, text in first
            ),
        )

    @admin.display(description="versions")
    def versions_shown(self, obj: Document) -> str:
        """Every version, newest first, each original a download (the one answering marked) and a link to what
        changed since the version before it (version_diff.py)."""
        url = reverse(f"{self.admin_site.name}:collections_app_document_download", args=[obj.pk])
        versions = list(document_versions_for(obj))  # newest first: each row's "before" is the next one
        rows = [
            (
                v.number,
                status_badge(v.status),
                v.filename,
                readable_size(v.size),
                f"{v.uploaded_at:%Y-%m-%d %H:%M} by {v.uploaded_by or '—'}",
                f"{v.published_at:%Y-%m-%d %H:%M}" if v.published_at else "—",
                f"{v.retired_at:%Y-%m-%d %H:%M}" if v.retired_at else "—",
                format_html('<span title="{}">{}…</span>', v.content_hash, v.content_hash[:12]),
                Truncator(v.error).chars(200) if v.error else "",
                format_html(
                    '<a href="{}" class="kb-version-compare">since version {}</a>',
                    versions_diff_url(obj, before.number, v.number),
                    before.number,
                )
                if before is not None
                else "—",
                format_html('<a href="{}?version={}">download</a>', url, v.number),
            )
            for v, before in zip(versions, [*versions[1:], None], strict=True)
        ]
        headers = [
            "version", "status", "file", "size", "uploaded", "answering from", "retired", "SHA-256", "error",
            "what changed", "",
        ]  # fmt: skip
        shown = table(headers, rows, empty="none recorded")
        if len(versions) < 2:
            return shown
        return format_html(
            '{}<p><a href="{}" class="kb-versions-compare">Compare any two versions</a></p>',
            shown,
            versions_diff_url(obj),
        )

    @admin.display(description="warnings")
    def warnings_shown(self, obj: Document) -> str:
        if not obj.warnings:
            return "none"
        return format_html("<ul>{}</ul>", format_html_join("", "<li>{}</li>", ((w,) for w in obj.warnings)))

    @admin.display(description="metadata")
    def metadata_shown(self, obj: Document) -> str:
        return key_value_rows(obj.metadata, empty="none")

    # --- upload ---------------------------------------------------------------------------------------

    def save_model(self, request: HttpRequest, obj: Document, form: Any, change: bool) -> None:
        if change:
            return
        uploads = form.cleaned_data["upload"]
        if len(uploads) > 1 or form.refused:
            return self.save_several(request, obj, form)
        upload = uploads[0]
        if family_of(upload.name) == "archive":
            return self.save_archive(request, obj, form, upload)  # each member a document: sources.py
        result = document_create(
            collection=form.cleaned_data["collection"],
            filename=upload.name,
            content=upload,
            source_uri=form.cleaned_data.get("source_uri", ""),
            uploaded_by=request.user.get_username(),
            ingest_options=form.ingest_options(),
            replace=form.cleaned_data.get("replace", False),
            metadata=form.cleaned_data.get("metadata_values"),
        )
        # The admin goes on with (logs, names in its message, redirects to) the stored document.
        for field in Document._meta.concrete_fields:
            setattr(obj, field.attname, getattr(result.document, field.attname))
        obj._state.adding = False
        obj._kb_already_held = not result.accepted  # type: ignore[attr-defined]
        obj._kb_version = result.version if result.versioned else None  # type: ignore[attr-defined]

    def save_several(self, request: HttpRequest, obj: Document, form: DocumentUploadForm) -> None:
        """Several files in one submit: each through the same upload service as one file, and one message per
        file (accepted, already held, or refused and why). The admin then lands on the collection's documents."""
        collection = form.cleaned_data["collection"]
        obj._archive_collection = collection  # type: ignore[attr-defined]  # no one object was added: the list of the collection follows
        for name, problem in form.refused:
            self.message_user(request, f"{name}: refused — {problem}", messages.ERROR)
        for upload in form.cleaned_data["upload"]:
            if family_of(upload.name) == "archive":
                self.save_archive(request, obj, form, upload)
                continue
            try:
                result = document_create(
                    collection=collection,
                    filename=upload.name,
                    content=upload,
                    uploaded_by=request.user.get_username(),
                    ingest_options=form.ingest_options(),
                    replace=form.cleaned_data.get("replace", False),
                    metadata=form.cleaned_data.get("metadata_values"),
                )
            except (UnsupportedFile, FileTooLarge, DomainError) as exc:  # a race with the limit or the store
                self.message_user(request, f"{upload.name}: refused — {exc}", messages.ERROR)
                continue
            if result.accepted and result.versioned:
                self.log_change(request, result.document, [{"changed": {"fields": ["version"]}}])
                self.message_user(
                    request, f"{upload.name}: version {result.version} of {result.document.filename}, queued.",
                    messages.SUCCESS,
                )  # fmt: skip
            elif result.accepted:
                self.log_addition(request, result.document, [{"added": {}}])
                self.message_user(request, f"{upload.name}: accepted, queued for ingestion.", messages.SUCCESS)
            else:
                self.message_user(
                    request, f"{upload.name}: already held as {result.document.filename}; nothing added.", messages.INFO
                )

    def response_add(self, request: HttpRequest, obj: Document, post_url_continue: str | None = None) -> HttpResponse:
        if version := getattr(obj, "_kb_version", None):
            self.message_user(
                request,
                f"{obj.filename}: version {version} is being read; the version before answers until it is done.",
                messages.SUCCESS,
            )
            return HttpResponseRedirect(
                reverse(f"{self.admin_site.name}:collections_app_document_change", args=[obj.pk])
            )
        if getattr(obj, "_kb_already_held", False):
            # Not "added": say only that it is already held, and show it.
            self.message_user(request, f"This content is already held as {obj.filename}.", messages.INFO)
            return HttpResponseRedirect(
                reverse(f"{self.admin_site.name}:collections_app_document_change", args=[obj.pk])
            )
        return super().response_add(request, obj, post_url_continue)

    # The stub promises a LogEntry; an upload that added nothing logs nothing (the admin ignores the value).
    def log_addition(self, request: HttpRequest, obj: Model, message: Any) -> LogEntry | None:  # type: ignore[override]
        if getattr(obj, "_kb_already_held", False):
            return None  # nothing was added
        if version := getattr(obj, "_kb_version", None):  # a new version of a document held: a change of it
            return self.log_change(request, obj, f"Uploaded version {version}.")
        return super().log_addition(request, obj, message)

    # --- re-ingest, download, the live status of the list ------------------------------------------------

    @admin.action(description="Re-ingest the selected documents", permissions=["change"])
    def reingest(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        documents = list(self.manageable(request, queryset))  # a viewer's tenants' rows are left alone
        readable = {d.pk for d in documents if document_can_reingest(d)}
        unreadable = [d.filename for d in documents if d.pk not in readable]
        documents = [d for d in documents if d.pk in readable]
        with transaction.atomic():
            for document in documents:
                document_queue_ingest(document=document, reingest=True)
        self.message_user(request, f"{len(documents)} document(s) queued for ingestion.")
        if skipped := queryset.count() - len(documents) - len(unreadable):
            self.message_user(request, f"{skipped} document(s) left alone: you may only view them.", messages.WARNING)
        if unreadable:
            self.message_user(
                request, f"Left alone, nothing to read again (no original, nothing read from one): "
                f"{', '.join(unreadable)}.", messages.WARNING,
            )  # fmt: skip

    tool_pages: tuple[ToolPage, ...] = (
        ToolPage("status/", "status_view", "status"),
        ToolPage("<path:object_id>/reingest/", "reingest_view", "reingest"),
        ToolPage("<path:object_id>/download/", "download_view", "download"),
    )

    def reingest_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Asks first (GET), then queues (POST): the document shows `queued` at once. The question says what is
        read again: the original, or for an imported document (no original) the paragraphs it was imported with."""
        document = object_for_tool(self, request, object_id, change=True)
        if not document_can_reingest(document):  # not offered on its page; an old link says why
            self.message_user(request, f"{document.filename} cannot be re-ingested: it has no original and nothing "
                              "read from one. Upload the file again.", messages.WARNING)  # fmt: skip
            return HttpResponseRedirect(
                reverse(f"{self.admin_site.name}:collections_app_document_change", args=[document.pk])
            )
        if request.method == "POST":
            with transaction.atomic():
                document_queue_ingest(document=document, reingest=True)
            self.message_user(request, f"Queued for ingestion: {document.filename}.")
            url = reverse(f"{self.admin_site.name}:collections_app_document_changelist")
            return HttpResponseRedirect(f"{url}?collection__id__exact={document.collection_id}")
        context = {
            **self.admin_site.each_context(request),
            "title": f"Re-ingest {document.filename}?",
            "opts": self.opts,
            "original": document,
            "reads": document_reingest_reads(document),
        }
        return TemplateResponse(request, "admin/collections_app/document/reingest.html", context)

    def download_view(self, request: HttpRequest, object_id: str) -> FileResponse | HttpResponseRedirect:
        """The stored original, under its own file name (never the path it is stored at); `?version=N`: that
        version's. A document without one (imported from a collection file), or whose file is gone, is sent back
        to its page with a message saying so, not to a bare 404."""
        document = object_for_tool(self, request, object_id, change=False)
        change_url = reverse(f"{self.admin_site.name}:collections_app_document_change", args=[document.pk])
        if not document.has_original and "version" not in request.GET:
            self.message_user(request, f"{document.filename} has no original to download: {IMPORTED_NOTE}",
                              messages.WARNING)  # fmt: skip
            return HttpResponseRedirect(change_url)
        stored: Document | DocumentVersion = document
        if "version" in request.GET:
            number = request.GET["version"]
            found = document_versions_for(document).filter(number=int(number)).first() if number.isdigit() else None
            if found is None:
                self.message_user(request, f"{document.filename} has no version {number}.", messages.WARNING)
                return HttpResponseRedirect(change_url)
            stored = found
        try:
            handle = stored.file.open("rb")
        except (OSError, ValueError):
            self.message_user(request, f"The original of {stored.filename} is no longer stored.", messages.WARNING)
            return HttpResponseRedirect(change_url)
        return FileResponse(handle, as_attachment=True, filename=stored.filename)

    def status_view(self, request: HttpRequest) -> JsonResponse:
        """The list's live cells of the documents asked for (?id=...), for the list's refresh script."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        ids = [value for value in request.GET.getlist("id")[:500] if _is_uuid(value)]
        rows = self.get_queryset(request).filter(pk__in=ids).defer(*UNLISTED_DOCUMENT_COLUMNS)
        documents = {
            str(d.pk): {
                "status": self.status_shown(d),
                "progress": self.progress_shown(d),
                "error": self.error_shown(d),
                "language": self.language_shown(d),
                "paragraphs": self.chunk_count_shown(d),
            }
            for d in rows
        }
        return JsonResponse({"documents": documents})


def _live(obj: Document, field: str, shown: object) -> str:
    """A list cell the refresh script can find and replace while the document is queued or parsing."""
    return format_html(
        '<span data-kb-doc="{}" data-kb-field="{}" data-kb-in-flight="{}">{}</span>',
        obj.pk,
        field,
        "1" if obj.status in DOCUMENT_IN_FLIGHT else "0",
        shown,
    )


def _chunks_url(document: Document) -> str:
    return reverse("admin:collections_app_chunk_changelist") + f"?document__id__exact={document.pk}"


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def ingestion_task(document: Document, *, link: bool) -> dict[str, object] | None:
    """The document's latest ingestion task as django-q2 recorded it (its name holds the document's id)."""
    task = (
        Task.objects.filter(name__contains=f"ingest document {document.pk}")
        .order_by("-started")
        .only("id", "name", "success", "started", "stopped")
        .first()
    )
    if task is None:
        return None
    page = "success" if task.success else "failure"
    return {
        "name": task.name,
        "outcome": "succeeded" if task.success else "failed",
        "stopped": task.stopped,
        "url": reverse(f"admin:django_q_{page}_change", args=[task.pk]) if link else "",
    }
