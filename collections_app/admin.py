"""Admin: editors manage their tenants' collections and documents; admins audit builds.

Non-superuser staff see only the rows of tenants they are members of, and may do there what their
membership role allows (admin_roles.py, admin_base.py).
"""

from __future__ import annotations

import copy

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import Count
from django.urls import reverse
from django.utils.html import format_html
from django_q import models as q_models

from collections_app.admin_base import (
    AuditAdmin,
    RoleGrantForm,
    SuperuserOnlyAdmin,
    TenantScopedAdmin,
    superuser_only,
)
from collections_app.admin_column_roles import ColumnRolesAdminMixin
from collections_app.admin_ocr import OcrAdminMixin, scanned_text_field, scanned_text_langs
from collections_app.admin_roles import grantable_roles
from collections_app.admin_sources import ArchiveUploadAdminMixin, AttachmentsAdminMixin, FolderSourceAdminMixin
from collections_app.exceptions import DomainError
from collections_app.ingestion import UnsupportedFile, check_upload
from collections_app.ingestion.chunking import StrategyNotBuilt
from collections_app.ingestion.formats import family_of
from collections_app.models import (
    Agent,
    ApiKey,
    Build,
    Chunk,
    Collection,
    Document,
    Membership,
    ReaderLabel,
    Role,
    Tenant,
)
from collections_app.services.collections import collection_create, collection_delete, collection_update
from collections_app.services.documents import document_create, document_delete, document_queue_ingest, upload_filename
from collections_app.services.keys import api_key_create
from collections_app.validation import name_problem, source_uri_problem

# Not any one tenant's: people, groups and the task queue (its rows name every tenant's documents).
superuser_only(
    admin.site, get_user_model(), Group, q_models.Schedule, q_models.Success, q_models.Failure, q_models.OrmQ
)


@admin.register(Tenant)
class TenantAdmin(SuperuserOnlyAdmin):
    list_display = ["name", "created_at"]
    search_fields = ["name"]


class RoleGrantAdmin(TenantScopedAdmin):
    """Keys and memberships: only a tenant's admin gives them, and never a role above its own."""

    manage_role = Role.ADMIN

    def get_form(self, request, obj=None, change=False, **kwargs):  # type: ignore[no-untyped-def]
        form = super().get_form(request, obj, change=change, **kwargs)
        return type(form.__name__, (form,), {"granter": request})

    def formfield_for_choice_field(self, db_field, request, **kwargs):  # type: ignore[no-untyped-def]
        if db_field.name == "role":
            kwargs["choices"] = [(r.value, r.label) for r in grantable_roles(request)]
        return super().formfield_for_choice_field(db_field, request, **kwargs)


class MembershipForm(RoleGrantForm):
    class Meta:
        model = Membership
        fields = ["user", "tenant", "role"]


@admin.register(Membership)
class MembershipAdmin(RoleGrantAdmin):
    form = MembershipForm
    list_display = ["user", "tenant", "role"]
    list_filter = ["role", "tenant"]
    list_select_related = ["user", "tenant"]


class AgentForm(forms.ModelForm):
    class Meta:
        model = Agent
        fields = ["tenant", "name", "collections"]

    def clean(self):  # type: ignore[no-untyped-def]
        data = super().clean() or self.cleaned_data
        tenant = data.get("tenant")
        foreign = [c.name for c in data.get("collections") or [] if tenant is not None and c.tenant_id != tenant.pk]
        if foreign:
            self.add_error("collections", f"Not collections of {tenant}: {', '.join(foreign)}.")
        return data


@admin.register(Agent)
class AgentAdmin(TenantScopedAdmin):
    form = AgentForm
    manage_role = Role.ADMIN
    list_display = ["name", "tenant", "created_at"]
    list_filter = ["tenant"]
    filter_horizontal = ["collections"]
    list_select_related = ["tenant"]


class ApiKeyForm(RoleGrantForm):
    class Meta:
        model = ApiKey
        fields = ["tenant", "name", "role", "agent", "revoked"]

    def clean(self):  # type: ignore[no-untyped-def]
        data = super().clean()
        tenant, agent = data.get("tenant"), data.get("agent")
        if tenant is not None and agent is not None and agent.tenant_id != tenant.pk:
            # api_key_create refuses it too; said here so the form shows it instead of failing on save.
            self.add_error("agent", f"{agent} is an agent of another tenant.")
        return data


@admin.register(ApiKey)
class ApiKeyAdmin(RoleGrantAdmin):
    form = ApiKeyForm
    list_display = ["prefix", "name", "tenant", "role", "agent", "created_at", "last_used_at", "revoked"]
    list_filter = ["role", "revoked", "tenant"]
    list_select_related = ["tenant", "agent"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]

    def get_fields(self, request, obj=None):  # type: ignore[no-untyped-def]
        # A new key is issued live; revoking is a change to an existing one.
        return ["tenant", "name", "role", "agent"] if obj is None else super().get_fields(request, obj)

    def save_model(self, request, obj, form, change):  # type: ignore[no-untyped-def]
        if change:
            return super().save_model(request, obj, form, change)
        # Issued by the service, which checks the agent's tenant and keeps only the secret's hash.
        issued = api_key_create(tenant=obj.tenant, role=obj.role, agent=obj.agent, name=obj.name)
        for field in ApiKey._meta.concrete_fields:  # the admin goes on with (logs, redirects to) this key
            setattr(obj, field.attname, getattr(issued.key, field.attname))
        obj._state.adding = False
        self.message_user(
            request,
            f"The new key is {issued.secret} — copy it now: it is stored hashed and will not be shown again.",
            messages.WARNING,
        )


class CollectionForm(forms.ModelForm):
    """The collection's settings, checked by the same service as the API's (bounds, strategy, model, name)."""

    class Meta:
        model = Collection
        exclude: list[str] = []

    def settings_given(self) -> dict:
        """What the service is given: every setting for a new collection, the changed ones for an existing one."""
        fields = self.fields if self.instance._state.adding else self.changed_data
        return {f: self.cleaned_data[f] for f in fields if f in self.cleaned_data and f not in ("tenant", "name")}

    def clean_name(self) -> str:
        # collection_create takes the name apart from the settings it checks: the shared rule, here.
        name = self.cleaned_data["name"]
        problem = name_problem(name, max_chars=Collection._meta.get_field("name").max_length or 200)
        if problem:
            raise forms.ValidationError(f"The name {problem}.")
        return name

    def save_through_service(self) -> Collection:
        if self.instance._state.adding:  # (a new row has its UUID already)
            data = self.cleaned_data
            return collection_create(tenant=data["tenant"], name=data["name"], **self.settings_given())
        changes = self.settings_given()
        if "name" in self.changed_data:
            changes["name"] = self.cleaned_data["name"]
        return collection_update(collection=copy.copy(self.instance), **changes)

    def clean(self):  # type: ignore[no-untyped-def]
        data = super().clean()
        if self.errors:
            return data
        # A dry run of the service in a savepoint that is always rolled back: its refusals become form
        # errors beside their field, and save_model then runs it for real.
        try:
            with transaction.atomic():
                self.save_through_service()
                transaction.set_rollback(True)
        except (DomainError, StrategyNotBuilt) as exc:
            field = getattr(exc, "field", None) or ("chunk_strategy" if isinstance(exc, StrategyNotBuilt) else None)
            self.add_error(field if field in self.fields else None, str(exc))
        return data


@admin.register(Collection)
class CollectionAdmin(FolderSourceAdminMixin, TenantScopedAdmin):
    form = CollectionForm
    list_display = ["name", "tenant", "chunk_strategy", "embedding_alias", "document_count", "per_reader"]
    list_filter = ["tenant", "chunk_strategy", "per_reader"]
    list_select_related = ["tenant"]
    search_fields = ["name"]
    readonly_fields = ["metadata_schema", "folder_source", "created_at", "updated_at"]
    actions = ["sync_folder_source"]

    def get_queryset(self, request):  # type: ignore[no-untyped-def]
        return super().get_queryset(request).annotate(document_count=Count("documents"))

    @admin.display(ordering="document_count", description="documents")
    def document_count(self, obj: Collection) -> int:
        return obj.document_count  # type: ignore[attr-defined]

    def save_model(self, request, obj, form, change):  # type: ignore[no-untyped-def]
        saved = form.save_through_service()
        for field in Collection._meta.concrete_fields:  # the admin goes on with (logs, redirects to) this row
            setattr(obj, field.attname, getattr(saved, field.attname))
        obj._state.adding = False

    def delete_model(self, request, obj):  # type: ignore[no-untyped-def]
        collection_delete(collection=obj)  # its stored originals go too

    def delete_queryset(self, request, queryset):  # type: ignore[no-untyped-def]
        for collection in queryset:
            collection_delete(collection=collection)


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
            return self.save_archive(request, obj, form)  # each member a document: admin_sources.py
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


@admin.register(Chunk)
class ChunkAdmin(AuditAdmin):
    list_display = ["document", "ordinal", "page", "section_trail", "language", "short_text"]
    list_filter = ["language", "collection"]
    list_select_related = ["document"]
    search_fields = ["text"]
    exclude = ["embedding", "search_vector"]

    def lookup_allowed(self, lookup, value, request=None) -> bool:  # type: ignore[no-untyped-def]
        # Filter by document through the URL (?document__id__exact=...), linked from the document page.
        return lookup in {"document__id__exact", "document"} or super().lookup_allowed(lookup, value, request)

    @admin.display(description="section")
    def section_trail(self, obj: Chunk) -> str:
        return " › ".join(obj.section)

    @admin.display(description="text")
    def short_text(self, obj: Chunk) -> str:
        return obj.text[:120]


@admin.register(Build)
class BuildAdmin(AuditAdmin):
    list_display = [
        "built_at", "collection", "document", "built_from", "model", "dims", "passages",
        "refused_names", "warning_lines",
    ]  # fmt: skip
    list_filter = ["collection", "model"]
    list_select_related = ["collection", "document"]
    readonly_fields = ["refused_names", "warning_lines"]

    @admin.display(description="refused")
    def refused_names(self, obj: Build) -> str:
        # Three answers, never collapsed: unknown, nothing, or the names.
        if obj.refused is None:
            return "not recorded"
        return ", ".join(obj.refused) if obj.refused else "nothing refused"

    @admin.display(description="warnings")
    def warning_lines(self, obj: Build) -> str:
        return "; ".join(obj.warnings) if obj.warnings else "none"


@admin.register(ReaderLabel)
class ReaderLabelAdmin(TenantScopedAdmin):
    manage_role = Role.ADMIN
    list_display = ["name", "tenant", "description"]
    list_filter = ["tenant"]
