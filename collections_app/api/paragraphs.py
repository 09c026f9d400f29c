"""A document's paragraphs, edited by hand (issue 20): list, edit or hide, split, merge with the next; the edit
history with revert. One view per operation; services/paragraph_edits.py does the work."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from collections_app import selectors
from collections_app.api.examples import PARAGRAPH_EDIT, PARAGRAPH_PAGE
from collections_app.api.views import TenantScopedView
from collections_app.models import Chunk, Document, ParagraphEdit
from collections_app.selectors.paragraphs import document_paragraph_edits, document_paragraphs_for_editors
from collections_app.services.documents import text_hash
from collections_app.services.paragraph_edits import (
    EditPending,
    paragraph_edit,
    paragraph_edit_discard,
    paragraph_edit_reapply,
    paragraph_edit_revert,
    paragraph_hide,
    paragraph_merge_next,
    paragraph_split,
)
from doors.api.authentication import request_key
from doors.api.inputs import StrictInput
from doors.api.pages import ARRAY_PAGE_NOTE, PageInput, array_page_of, page_of
from doors.api.permissions import EditorOnly
from doors.api.schema import BODY, GUARDED, GUARDED_LISTED, refusals

_CONFLICT = "the document is being read, a re-index is pending, or the edit clashes with a later one"
_CONFLICT_EXAMPLE = "a later edit changed the paragraphs this edit left: revert that one first"


class ParagraphPage(PageInput):
    default_limit = 100
    max_limit = 500


class EditPage(PageInput):
    default_limit = max_limit = 500  # the newest 500 were all the history answered before it paged


class ParagraphOutput(serializers.ModelSerializer):
    # Its place, ChunkPosition's (Chunk.ordinal): the number and the schema the column had.
    ordinal = serializers.IntegerField(read_only=True, min_value=0, max_value=2147483647)

    class Meta:
        model = Chunk
        fields = ["id", "text", "ordinal", "page", "section", "language", "labels", "hidden", "edited"]
        read_only_fields = fields


class ParagraphPageOutput(serializers.Serializer):
    count = serializers.IntegerField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()
    results = ParagraphOutput(many=True)


PREVIOUS_TEXT_HELP = (
    "optional: the paragraph's text as you read it. If it has changed since (another editor's edit, split or merge), "
    "the answer is 409 and nothing changes, instead of your change being made on text you did not see"
)


class ParagraphPatchInput(StrictInput):
    text = serializers.CharField(required=False, trim_whitespace=False, help_text="the paragraph's new text")
    previous_text = serializers.CharField(required=False, trim_whitespace=False, help_text=PREVIOUS_TEXT_HELP)
    hidden = serializers.BooleanField(required=False, help_text="true: hidden from every reader; false: shown")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError("send text, hidden or both")
        return attrs


class ParagraphSplitInput(StrictInput):
    at = serializers.IntegerField(min_value=1, help_text="the character the second paragraph starts at")
    previous_text = serializers.CharField(required=False, trim_whitespace=False, help_text=PREVIOUS_TEXT_HELP)


class ParagraphMergeInput(StrictInput):
    across_sections = serializers.BooleanField(
        default=False, help_text="merge even when the next paragraph is in another section (takes this one's)"
    )


class ParagraphsOutput(serializers.Serializer):
    paragraphs = ParagraphOutput(many=True)


class ParagraphEditOutput(serializers.ModelSerializer):
    class Meta:
        model = ParagraphEdit
        fields = ["id", "operation", "status", "by", "created_at", "before", "after", "params", "reverts"]
        read_only_fields = fields


class ParagraphEditReapplyInput(serializers.Serializer):
    paragraph_id = serializers.UUIDField(help_text="the paragraph the edit is applied to now")


def _who(request: Request) -> str:
    # A key's name and its public prefix: never the secret.
    key = request_key(request)
    return f"key {key.name or key.prefix}"[:200]


def _answer(operation: Callable[[], list[Chunk]]) -> Response:
    """The paragraphs an operation changed (200), or the pending edit a task finishes when its text is too long to
    embed in the request (202)."""
    try:
        return Response(ParagraphsOutput({"paragraphs": operation()}).data)
    except EditPending as pending:
        return _pending(pending.edit)


def _seen(data: dict[str, Any]) -> str | None:
    return text_hash(data["previous_text"]) if "previous_text" in data else None


def _pending(edit: ParagraphEdit) -> Response:
    return Response(ParagraphEditOutput(edit).data, status=status.HTTP_202_ACCEPTED)


_PENDING = OpenApiResponse(
    ParagraphEditOutput,
    description="The text to embed is long: the edit is `pending` and a task embeds and applies it (a minute or "
    "so); searches read the paragraph as it was until then. Its status shows in the edit history.",
)


class _DocumentView(TenantScopedView):
    permission_classes = [EditorOnly]
    editors_material = "A document's paragraphs as its editors see them (hidden ones included)"

    def get_document(self, request: Request, collection_id: UUID, document_id: UUID) -> Document:
        collection = self.get_collection(request, collection_id)
        return get_object_or_404(selectors.documents_for(collection), pk=document_id)


class ParagraphListView(_DocumentView):
    @extend_schema(
        summary="List a document's paragraphs as its editors see them, a page at a time",
        parameters=[ParagraphPage],
        responses={200: ParagraphPageOutput, **refusals(*GUARDED_LISTED)},
        examples=[OpenApiExample("A page", value=PARAGRAPH_PAGE, response_only=True, status_codes=["200"])],
        description="In document order, hidden ones included (`hidden`: no reader gets them), `edited`: text "
        "changed by hand. Needs an editor or admin key.",
    )
    def get(self, request: Request, collection_id: UUID, document_id: UUID) -> Response:
        document = self.get_document(request, collection_id, document_id)
        return page_of(request, document_paragraphs_for_editors(document), ParagraphOutput, page=ParagraphPage)


class ParagraphDetailView(_DocumentView):
    @extend_schema(
        summary="Edit a paragraph's text, or hide or show it",
        request=ParagraphPatchInput,
        examples=[
            OpenApiExample("New text", value={"text": "Refunds are paid within 5 days."}, request_only=True),
            OpenApiExample("Hidden", value={"hidden": True}, request_only=True),
        ],
        responses={
            200: ParagraphsOutput,
            202: _PENDING,
            **refusals(*BODY, 409, conflict=_CONFLICT, conflict_example=_CONFLICT_EXAMPLE),
        },
        description="One transaction: searches see the paragraph before or after. New text is embedded again "
        "(that paragraph only) and its keyword index rebuilt; labels, page and section carry over, the language is "
        "detected again unless pinned. A hidden paragraph is returned by no search, window, parent section, corpus "
        "map or export. Every change is an edit of its own, replayed by re-chunks and re-indexes.",
    )
    def patch(self, request: Request, collection_id: UUID, document_id: UUID, paragraph_id: UUID) -> Response:
        document = self.get_document(request, collection_id, document_id)
        data = ParagraphPatchInput(data=request.data)
        data.is_valid(raise_exception=True)
        changed: list[Chunk] = []
        pending = None
        if "text" in data.validated_data:
            try:
                changed = paragraph_edit(
                    document=document,
                    paragraph_id=paragraph_id,
                    text=data.validated_data["text"],
                    by=_who(request),
                    seen=_seen(data.validated_data),
                )
            except EditPending as long:
                pending = long.edit
        if "hidden" in data.validated_data:
            changed = paragraph_hide(
                document=document, paragraph_id=paragraph_id, hidden=data.validated_data["hidden"], by=_who(request)
            )
        return _pending(pending) if pending is not None else _answer(lambda: changed)


class ParagraphSplitView(_DocumentView):
    @extend_schema(
        summary="Split a paragraph at a character into two",
        request=ParagraphSplitInput,
        responses={
            200: ParagraphsOutput,
            202: _PENDING,
            **refusals(*BODY, 409, conflict=_CONFLICT, conflict_example=_CONFLICT_EXAMPLE),
        },
        description="Both halves keep the paragraph's page, section and labels; the two are embedded, nothing else "
        "(a long paragraph's by a task: 202 with the pending edit).",
    )
    def post(self, request: Request, collection_id: UUID, document_id: UUID, paragraph_id: UUID) -> Response:
        document = self.get_document(request, collection_id, document_id)
        data = ParagraphSplitInput(data=request.data)
        data.is_valid(raise_exception=True)
        at, seen = data.validated_data["at"], _seen(data.validated_data)
        return _answer(
            lambda: paragraph_split(document=document, paragraph_id=paragraph_id, at=at, by=_who(request), seen=seen)
        )


class ParagraphMergeNextView(_DocumentView):
    @extend_schema(
        summary="Merge a paragraph with the next one of the same document",
        request=ParagraphMergeInput,
        responses={
            200: ParagraphsOutput,
            202: _PENDING,
            **refusals(*BODY, 409, conflict=_CONFLICT, conflict_example=_CONFLICT_EXAMPLE),
        },
        description="Never across documents; across a section boundary only with `across_sections` (the merged "
        "paragraph takes the first one's section). Its labels are never wider than either paragraph's.",
    )
    def post(self, request: Request, collection_id: UUID, document_id: UUID, paragraph_id: UUID) -> Response:
        document = self.get_document(request, collection_id, document_id)
        data = ParagraphMergeInput(data=request.data)
        data.is_valid(raise_exception=True)
        across = data.validated_data["across_sections"]
        return _answer(
            lambda: paragraph_merge_next(
                document=document, paragraph_id=paragraph_id, by=_who(request), across_sections=across
            )
        )


class ParagraphEditListView(_DocumentView):
    @extend_schema(
        summary="A document's paragraph edits, newest first",
        parameters=[EditPage],
        responses={200: ParagraphEditOutput(many=True), **refusals(*GUARDED_LISTED)},
        examples=[OpenApiExample("History", value=PARAGRAPH_EDIT, response_only=True, status_codes=["200"])],
        description="`status`: applied, stale (a new version of the file changed the paragraph: not applied, "
        "re-apply it to another paragraph or discard it), reverted, reapplied, discarded, pending (too long to embed "
        "in its request: a task is embedding it) or failed (it no longer applied when the task came to it: "
        "`params.error` says why). " + ARRAY_PAGE_NOTE,
    )
    def get(self, request: Request, collection_id: UUID, document_id: UUID) -> Response:
        document = self.get_document(request, collection_id, document_id)
        return array_page_of(request, document_paragraph_edits(document), ParagraphEditOutput, page=EditPage)


class _EditView(_DocumentView):
    def get_edit(self, request: Request, collection_id: UUID, document_id: UUID, edit_id: UUID) -> ParagraphEdit:
        document = self.get_document(request, collection_id, document_id)
        return get_object_or_404(document_paragraph_edits(document), pk=edit_id)


class ParagraphEditRevertView(_EditView):
    @extend_schema(
        summary="Revert a paragraph edit",
        request=None,
        responses={
            200: ParagraphsOutput,
            202: _PENDING,
            **refusals(*GUARDED, 409, conflict=_CONFLICT, conflict_example=_CONFLICT_EXAMPLE),
        },
    )
    def post(self, request: Request, collection_id: UUID, document_id: UUID, edit_id: UUID) -> Response:
        edit = self.get_edit(request, collection_id, document_id, edit_id)
        return _answer(lambda: paragraph_edit_revert(edit=edit, by=_who(request)))


class ParagraphEditReapplyView(_EditView):
    @extend_schema(
        summary="Re-apply an edit that no longer applies to another paragraph",
        request=ParagraphEditReapplyInput,
        responses={
            200: ParagraphsOutput,
            **refusals(*BODY, 409, conflict=_CONFLICT, conflict_example=_CONFLICT_EXAMPLE),
        },
    )
    def post(self, request: Request, collection_id: UUID, document_id: UUID, edit_id: UUID) -> Response:
        edit = self.get_edit(request, collection_id, document_id, edit_id)
        data = ParagraphEditReapplyInput(data=request.data)
        data.is_valid(raise_exception=True)
        paragraph_id = data.validated_data["paragraph_id"]
        return _answer(lambda: paragraph_edit_reapply(edit=edit, paragraph_id=paragraph_id, by=_who(request)))


class ParagraphEditDiscardView(_EditView):
    @extend_schema(
        summary="Discard an edit that no longer applies",
        request=None,
        responses={204: None, **refusals(*GUARDED, 409, conflict=_CONFLICT, conflict_example=_CONFLICT_EXAMPLE)},
    )
    def post(self, request: Request, collection_id: UUID, document_id: UUID, edit_id: UUID) -> Response:
        paragraph_edit_discard(edit=self.get_edit(request, collection_id, document_id, edit_id))
        return Response(status=204)
