"""Gaps: the questions of a collection nobody could answer (admin keys of the tenant only, as the audit's questions).

GET   /api/manage/collections/{id}/gaps           the groups, most asked first (dismissed ones left out)
POST  /api/manage/collections/{id}/gaps/dismiss   hide a group until one of its questions is asked again
"""

from __future__ import annotations

from uuid import UUID

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from collections_app import selectors
from collections_app.models import Collection
from doors.api.authentication import request_key
from doors.api.inputs import StrictInput
from doors.api.pages import ARRAY_PAGE_NOTE, LongListPage, array_page_of
from doors.api.permissions import AdminOnly
from doors.api.schema import BODY, GUARDED_LISTED, refusals
from retrieval.selectors.gaps import GapsReport, collection_gaps, recording_note
from retrieval.services.gaps import gap_dismiss

RECORDING_HEADER = "X-Questions-Recorded"
NOTE_HEADER = "X-Gaps-Note"
GAPS_NOTE = (
    "A gap is a question a search of this collection by an API key answered with nothing, or with weak results only "
    "(no result supported). Wordings that ask the same thing are one gap (the collection's embedding model decides, "
    "at a measured similarity), with its wordings in `questions`. Questions are kept only while KB_AUDIT_QUESTIONS "
    f"is on: the `{RECORDING_HEADER}` header says `on` or `off`, and when off `{NOTE_HEADER}` says how to turn it on "
    "and how many unanswered searches kept no question (it also says how many rare wordings past the 300 most asked "
    "are not listed). Searches tried in the admin are not counted. Admin keys only."
)
GAP_EXAMPLE = {
    "question": "Can I bring my dog to the office?",
    "count": 4,
    "first_seen": "2026-12-01T09:12:03Z",
    "last_seen": "2026-12-07T14:02:51Z",
    "badge": "empty",
    "readers": ["ada@example.com"],
    "agents": ["support-bot"],
    "questions": [
        {"question": "Can I bring my dog to the office?", "count": 3},
        {"question": "can I bring my dog to work", "count": 1},
    ],
}


class GapsAdminOnly(AdminOnly):
    message = "The questions nobody could answer are shown to the tenant's admins only: use an admin key."


class VariantOutput(serializers.Serializer):
    question = serializers.CharField()
    count = serializers.IntegerField()


class GapOutput(serializers.Serializer):
    question = serializers.CharField(help_text="the group's most asked wording")
    count = serializers.IntegerField(help_text="searches that asked it, every wording together")
    first_seen = serializers.DateTimeField()
    last_seen = serializers.DateTimeField()
    badge = serializers.ChoiceField(
        choices=["empty", "weak"],
        help_text="what its latest search got: `empty` nothing came back; `weak` only weak results (none supported)",
    )
    readers = serializers.ListField(child=serializers.CharField(), help_text="the registered readers it was asked as")
    agents = serializers.ListField(child=serializers.CharField(), help_text="the agents that asked (or were asked for)")
    questions = VariantOutput(many=True, source="variants", help_text="each wording in the group and its count")


class DismissInput(StrictInput):
    question = serializers.CharField(
        trim_whitespace=False, help_text="A gap's question (or any wording of it), as the list shows it."
    )


class DismissOutput(serializers.Serializer):
    dismissed = GapOutput()
    dismissed_at = serializers.DateTimeField()


class GapsDoor(APIView):
    permission_classes = [GapsAdminOnly]

    def get_collection(self, request: Request, collection_id: UUID) -> Collection:
        return selectors.collection_for_key_or_404(request_key(request), collection_id)


def _with_recording(response: Response, report: GapsReport) -> Response:
    response[RECORDING_HEADER] = "on" if report.recording else "off"
    notes = []
    if not report.recording:
        notes.append(recording_note())
        if report.unrecorded:
            notes.append(f"{report.unrecorded} unanswered search(es) kept no question.")
    if report.left_out:
        notes.append(f"{report.left_out} rarer wording(s), asked fewer times than those listed, are not listed.")
    if notes:
        response[NOTE_HEADER] = " ".join(notes)
    return response


class GapListView(GapsDoor):
    @extend_schema(
        summary="The questions nobody could answer, grouped",
        description=GAPS_NOTE + " " + ARRAY_PAGE_NOTE,
        parameters=[
            LongListPage,
            OpenApiParameter(
                RECORDING_HEADER,
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                response=[200],
                enum=["on", "off"],
                description="whether questions are recorded (KB_AUDIT_QUESTIONS)",
            ),
            OpenApiParameter(
                NOTE_HEADER,
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                response=[200],
                description="when recording is off: how to turn it on, and how many unanswered searches "
                "kept no question; how many rare wordings are not listed",
            ),
        ],
        responses={200: GapOutput(many=True), **refusals(*GUARDED_LISTED)},
        examples=[
            OpenApiExample("A gap asked four times", value=GAP_EXAMPLE, response_only=True, status_codes=["200"])
        ],
    )
    def get(self, request: Request, collection_id: UUID) -> Response:
        report = collection_gaps(collection=self.get_collection(request, collection_id))
        return _with_recording(array_page_of(request, report.gaps, GapOutput, page=LongListPage), report)


class GapDismissView(GapsDoor):
    @extend_schema(
        summary="Dismiss a gap until it is asked again",
        description="Hides the gap holding this question (every wording of it) until a search asks one of them "
        "again. What is kept is a digest of each wording, never the text.",
        request=DismissInput,
        examples=[
            OpenApiExample("Dismiss a gap", value={"question": "Can I bring my dog to the office?"}, request_only=True)
        ],
        responses={200: DismissOutput, **refusals(*BODY)},
    )
    def post(self, request: Request, collection_id: UUID) -> Response:
        collection = self.get_collection(request, collection_id)
        data = DismissInput(data=request.data)
        data.is_valid(raise_exception=True)
        key = request_key(request)
        gap, dismissal = gap_dismiss(
            collection=collection, question=data.validated_data["question"], dismissed_by=key.name or key.prefix
        )
        return Response(DismissOutput({"dismissed": gap, "dismissed_at": dismissal.dismissed_at}).data)
