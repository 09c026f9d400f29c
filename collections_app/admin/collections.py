"""Admin: a tenant's collections — their settings, checked by the same service as the API's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count, Model, Q, QuerySet, Sum
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from accounts.models import Role
from collections_app.admin.collection_files import CollectionExportAdminMixin, import_failed, import_state
from collections_app.admin.collection_languages import CollectionLanguagesAdminMixin, languages_fieldset
from collections_app.admin.reader_labels import CollectionReadersAdminMixin
from collections_app.admin.reindex import ReindexAdminMixin
from collections_app.admin.sources import FolderSourceAdminMixin
from collections_app.models import Collection, Document
from collections_app.services.collections import collection_create, collection_delete, collection_update
from collections_app.services.deletion import DeleteBusy
from collections_app.services.folder_sources import FolderSourceError, folder_source_options_set, folder_source_set
from doors.admin.base import TenantScopedAdmin
from doors.admin.display import shown_value, table
from doors.admin.roles import may, role_in, tenants_where
from embedding import available_models
from infra.errors import DomainError
from infra.validation import name_problem
from ingestion.chunking import StrategyNotBuilt


class CollectionForm(forms.ModelForm):
    """The collection's settings, checked by the same service as the API's (bounds, strategy, model, name)."""

    # The role the service checks changes against; CollectionAdmin.get_form sets the person's own.
    actor_role: Role | None = Role.VIEWER

    class Meta:
        model = Collection
        exclude: list[str] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "embedding_alias" in self.fields:
            # Chosen from the registered models (embedding), never typed.
            model_field = Collection._meta.get_field("embedding_alias")
            current = self.initial.get("embedding_alias") or model_field.default
            choices = [
                (alias, f"{alias} — {m.model_id}, {m.dims or '?'} dimensions")
                for alias, m in available_models().items()
            ]
            if current and current not in dict(choices):
                choices.append((current, f"{current} (not registered on this server)"))
            self.fields["embedding_alias"] = forms.ChoiceField(
                choices=choices, label="Embedding model", help_text=model_field.help_text, initial=current
            )

    def settings_given(self) -> dict:
        """What the service is given: every setting for a new collection, the changed ones for an existing one.

        An overlap the editor left as it was is not given: a size or unit changed beside it then brings its own
        (services/collections.py: collection_chunking_with), as in the API."""
        fields = list(self.fields) if self.instance._state.adding else self.changed_data
        if "chunk_overlap" not in self.changed_data:
            fields = [f for f in fields if f != "chunk_overlap"]
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
        # The folder source has its own service: the tenant's admins only, a folder inside the tenant's own.
        folder = changes.pop("folder_source", None)
        options = changes.pop("folder_source_options", None)
        if "name" in self.changed_data:
            changes["name"] = self.cleaned_data["name"]
        # The row as stored, not self.instance: by save_model the form has copied the new values onto it, and the
        # service must see what changes (documents made stale, the model searches keep, an overlap brought along,
        # per_reader switched).
        collection = collection_update(
            collection=Collection.objects.get(pk=self.instance.pk), role=self.actor_role, **changes
        )
        if folder is not None:
            collection = folder_source_set(collection=collection, folder=folder, role=self.actor_role)
        if options is not None:
            collection = folder_source_options_set(collection=collection, options=options, role=self.actor_role)
        return collection

    def clean(self) -> dict[str, Any]:
        data = super().clean() or self.cleaned_data
        if self.errors:
            return data
        # A dry run of the service in a savepoint that is always rolled back: its refusals become form
        # errors beside their field, and save_model then runs it for real.
        try:
            with transaction.atomic():
                saved = self.save_through_service()
                transaction.set_rollback(True)
        except (DomainError, StrategyNotBuilt, FolderSourceError) as exc:
            field = getattr(exc, "field", None) or ("chunk_strategy" if isinstance(exc, StrategyNotBuilt) else None)
            self.add_error(field if field in self.fields else None, str(exc))
        else:
            # The overlap the service stores (one a new size brought along): the form's own model checks, the
            # overlap-below-size constraint among them, then judge it rather than the value left on the page.
            if "chunk_overlap" in self.cleaned_data:
                self.cleaned_data["chunk_overlap"] = saved.chunk_overlap
        return data


BASICS = ["tenant", "name", "description"]
CHUNKING = ["chunk_strategy", "chunk_size", "chunk_size_unit", "chunk_overlap", "parent_size", "parent_return",
            "merge_threshold"]  # fmt: skip
RETRIEVAL = ["embedding_alias", "rerank_top_k", "rerank_top_n", "hybrid_weight", "score_threshold", "min_score",
             "around", "window_max_chars", "per_reader", "golden_gate", "golden_gate_tolerance",
             "step_back"]  # fmt: skip


@admin.register(Collection)
class CollectionAdmin(
    CollectionLanguagesAdminMixin,
    CollectionReadersAdminMixin,
    FolderSourceAdminMixin,
    ReindexAdminMixin,
    CollectionExportAdminMixin,
    TenantScopedAdmin,
):
    form = CollectionForm
    list_display = ["name", "tenant", "chunk_strategy", "embedding_alias", "document_count", "reindex_shown",
                    "per_reader"]  # fmt: skip
    list_filter = ["tenant", "chunk_strategy", "per_reader"]
    list_select_related = ["tenant"]
    search_fields = ["name"]
    readonly_fields = ["documents_by_status", "reindex_shown", "metadata_schema_shown", "folder_source_shown",
                       "created_at", "updated_at"]  # fmt: skip
    actions = ["sync_folder_source", "reindex", "export_collection_file"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Collection]:
        # A join counts every row: the trash's are left out by name (Document.objects does not reach an annotation).
        live = Q(documents__trashed_at__isnull=True)
        return super().get_queryset(request).annotate(document_count=Count("documents", filter=live))

    def get_fieldsets(self, request: HttpRequest, obj: Collection | None = None) -> Any:
        basics = BASICS if obj is None else [*BASICS, "documents_by_status", "reindex_shown", "folder_source_shown"]
        advanced = ["exclude_patterns"] if obj is None else ["metadata_schema_shown", "exclude_patterns",
                                                               "created_at", "updated_at"]  # fmt: skip
        return [
            ("Basics", {"fields": basics}),
            ("Chunking", {"classes": ["collapse"], "fields": CHUNKING,
                          "description": "How documents are cut into paragraphs; applies to the next ingestion."}),
            ("Retrieval", {"classes": ["collapse"], "fields": RETRIEVAL,
                           "description": "How searches of this collection find, rank and return paragraphs."}),
            ("Languages", languages_fieldset(obj)),
            ("Advanced", {"classes": ["collapse"], "fields": advanced}),
            *self._folder_source_fieldset(request, obj),
        ]  # fmt: skip

    def _folder_source_fieldset(self, request: HttpRequest, obj: Collection | None) -> list[tuple[str, dict[str, Any]]]:
        # Who reads what a folder holds is the tenant admins' call: only they see and set the folder.
        if obj is None or not may(request, obj.tenant_id, Role.ADMIN):
            return []
        return [
            (
                "Folder source",
                {
                    "classes": ["collapse"],
                    "fields": ["folder_source", "folder_source_options"],
                    "description": f"A folder under KB_FOLDER_SOURCES_ROOT/{obj.tenant.name}/ "
                    "that this collection mirrors; only the tenant's admins see or change it.",
                },
            )
        ]

    def get_form(
        self, request: HttpRequest, obj: Collection | None = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm[Collection]]:
        form = super().get_form(request, obj, change, **kwargs)
        # The service decides what this person's role may change (per_reader: admins only).
        role = role_in(request, obj.tenant_id) if obj is not None else Role.VIEWER
        form.actor_role = role  # type: ignore[attr-defined]
        return form

    def get_readonly_fields(self, request: HttpRequest, obj: Collection | None = None) -> list[str] | tuple[str, ...]:
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and not may(request, obj.tenant_id, Role.ADMIN):
            fields.append("per_reader")  # who reads what is the tenant admins' decision
        return fields

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        # The chunking fields start at the model's defaults (CHUNKING_DEFAULTS), the API's too.
        initial: dict[str, Any] = dict(super().get_changeform_initial_data(request))
        tenants = tenants_where(request, Role.EDITOR)
        if "tenant" not in initial and tenants is not None and len(tenants) == 1:
            initial["tenant"] = tenants[0]  # the one tenant this person may add collections to
        return initial

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        # Try a search, the golden questions, evaluate and measure are retrieval's pages, reached by URL name, not
        # by an import; evaluate and measure open with this collection chosen.
        site, pk = self.admin_site.name, unquote(object_id)
        search = reverse(f"{site}:retrieval_searchevent_try_search", args=[pk])
        golden = reverse(f"{site}:retrieval_goldenquestion_changelist") + f"?collection__id__exact={pk}"
        tools = [("Try a search", search), ("Golden questions", golden)]
        context: dict[str, Any] = {}
        collection = self.get_object(request, pk)
        if collection is not None and self.has_change_permission(request, collection):
            tools += [
                ("Evaluate", reverse(f"{site}:retrieval_goldenquestion_evaluate") + f"?collection={pk}"),
                ("Measure", reverse(f"{site}:retrieval_goldenquestion_measure") + f"?collection={pk}"),
                ("Export", reverse(f"{site}:collections_app_collection_export", args=[pk])),
            ]
            # The trash of its documents (collections_app/admin/trash.py), the editors' as deleting is.
            tools.append(("Trash", reverse(f"{site}:collections_app_document_trash") + f"?collection={pk}"))
        if collection is not None and may(request, collection.tenant_id, Role.ADMIN):  # the audit's questions
            tools.append(("Gaps", reverse(f"{site}:retrieval_gapdismissal_gaps", args=[collection.pk])))
        if collection is not None:
            # An import running, or failed and leaving nothing: said at the top of the page, not only in a field.
            context["kb_import_banner"] = import_state(collection)
            context["kb_import_failed"] = import_failed(collection)
        return super().change_view(
            request, object_id, form_url, {"kb_tools": tools, **context, **(extra_context or {})}
        )

    @admin.display(ordering="document_count", description="documents")
    def document_count(self, obj: Collection) -> str:
        if import_failed(obj):  # not "0" as if it were merely empty: the state column says its import failed
            return format_html('<span title="{}">—</span>', "its import failed: nothing of the file was kept")
        return format_html('<a href="{}">{}</a>', _documents_url(obj), obj.document_count)  # type: ignore[attr-defined]

    @admin.display(description="documents")
    def documents_by_status(self, obj: Collection) -> str:
        counts = dict(obj.documents.values_list("status").annotate(n=Count("id")).order_by())
        if not counts and import_failed(obj):
            return format_html('none: <span class="kb-badge kb-badge-error">import failed</span> (see above)')
        if not counts:
            return format_html(
                'none yet — <a href="{}?collection={}">upload one</a>',
                reverse("admin:collections_app_document_add"),
                obj.pk,
            )
        total = sum(counts.values())
        parts = format_html_join(
            ", ",
            '<a href="{}">{} {}</a>',
            ((f"{_documents_url(obj)}&status__exact={status}", n, status) for status, n in sorted(counts.items())),
        )
        return format_html('<a href="{}">{} document(s)</a>: {}', _documents_url(obj), total, parts)

    @admin.display(description="metadata schema")
    def metadata_schema_shown(self, obj: Collection) -> str:
        rows = []
        for name, spec in (obj.metadata_schema or {}).items():
            spec = spec if isinstance(spec, dict) else {"type": spec}
            rest = {k: v for k, v in spec.items() if k != "type"}
            rows.append((name, spec.get("type", ""), "; ".join(f"{k}: {shown_value(v)}" for k, v in rest.items())))
        return table(["field", "type", "details"], rows, empty="no metadata fields declared")

    def save_model(self, request: HttpRequest, obj: Collection, form: Any, change: bool) -> None:
        saved = form.save_through_service()
        for field in Collection._meta.concrete_fields:  # the admin goes on with (logs, redirects to) this row
            setattr(obj, field.attname, getattr(saved, field.attname))
        obj._state.adding = False

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        # A deleted collection leaves the list at once; while its rows go, a note above the list says so, rather
        # than a collection that is simply gone mid-way (or still there, emptying).
        context = {"kb_being_deleted": being_deleted(request), **(extra_context or {})}
        return super().changelist_view(request, context)

    def get_deleted_objects(
        self, objs: Sequence[Model] | QuerySet, request: HttpRequest
    ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        # The stock page lists every row a deletion cascades to: it loaded a large collection's paragraphs one by one
        # before asking. Counts say the same, from the documents' stored paragraph counts.
        collections = list(objs)
        counts = Document.all_objects.filter(collection__in=collections).aggregate(
            documents=Count("id"), paragraphs=Sum("chunk_count")
        )
        summary = {
            "documents": counts["documents"] or 0,
            "paragraphs (removed in the background; gone from every search at once)": counts["paragraphs"] or 0,
        }
        # The stock page's permission check, kept: one collection this person may not delete refuses the whole lot.
        refused = {str(self.opts.verbose_name) for c in collections if not self.has_delete_permission(request, c)}
        return [str(c) for c in collections], summary, refused, []

    def delete_model(self, request: HttpRequest, obj: Collection) -> None:
        # Gone for readers at its commit; rows and stored originals in the background. A collection an import is
        # writing cannot be flagged without waiting for all of it: the admin's 403 page says why and what to do.
        try:
            collection_delete(collection=obj)
        except DeleteBusy as busy:
            raise PermissionDenied(str(busy)) from busy

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Collection]) -> None:
        for collection in queryset:
            self.delete_model(request, collection)


def being_deleted(request: HttpRequest) -> list[dict[str, Any]]:
    """The collections of the person's tenants being deleted, oldest first (the note above the list)."""
    rows = Collection.all_objects.deleting().filter(tenant__deleting_at__isnull=True)
    tenants = tenants_where(request, Role.VIEWER)
    if tenants is not None:
        rows = rows.filter(tenant__in=tenants)
    return [
        {"name": name, "tenant": tenant, "since": since}
        for name, tenant, since in rows.order_by("deleting_at", "name").values_list(
            "name", "tenant__name", "deleting_at"
        )[:50]
    ]


def _documents_url(collection: Collection) -> str:
    return reverse("admin:collections_app_document_changelist") + f"?collection__id__exact={collection.pk}"
