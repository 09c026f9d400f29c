"""POST /api/citations/verify: the facts of each citation an agent's answer makes (retrieval/services/citations.py)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from collections_app.services.collections import MAX_NAME_CHARS
from doors.api.authentication import request_key
from doors.api.inputs import StrictInput
from doors.api.schema import NEW_BODY, refusals
from doors.api.throttles import SearchThrottle
from retrieval.api import examples
from retrieval.services.citations import MAX_CITATIONS, MAX_QUOTE_CHARS, Citation, citations_verify
from retrieval.services.search_events import on_behalf_of_agent


class CitationInput(StrictInput):
    paragraph_id = serializers.CharField(
        max_length=100,
        help_text="the paragraph cited: a result's `chunk_id` or one of its `matches[].paragraph_id` (any other "
        "id, a malformed one included, answers `exists: false`)",
    )
    quote = serializers.CharField(
        required=False,
        allow_null=True,
        trim_whitespace=False,
        max_length=MAX_QUOTE_CHARS,
        help_text="the words the answer quotes from it; absent or null: no quote to check",
    )


class CitationsVerifyInput(StrictInput):
    search_id = serializers.UUIDField(
        required=False,
        allow_null=True,
        help_text="the search the answer was built from (its answer's `search_id`), made with this key or another "
        "key of its agent; absent: `surfaced` is null and readability is judged for `reader`",
    )
    # many=True hands max_length to the ListSerializer (DRF 3.15); the stubs do not know it.
    citations = CitationInput(  # type: ignore[call-arg]
        many=True,
        allow_empty=False,
        max_length=MAX_CITATIONS,
        help_text=f"the citations to check (1 to {MAX_CITATIONS}), each a paragraph id and optionally its quote",
    )
    reader = serializers.CharField(
        required=False,
        max_length=MAX_NAME_CHARS,
        help_text="without a search_id: the registered reader `readable` is judged for (absent: a reader holding "
        "no label; the key must act for it, 403 otherwise); with one, the search's own reader is used and this "
        "must be left out",
    )
    on_behalf_of = serializers.CharField(
        required=False,
        max_length=MAX_NAME_CHARS,
        help_text="the agent (by name, in this tenant) this check is made for: recorded with the check",
    )


class RetiredOutput(serializers.Serializer):
    how = serializers.ChoiceField(
        choices=["replaced", "deleted", "hidden"],
        help_text="replaced: its document was rebuilt since (re-index, rechunk, new version, edit), so another "
        "paragraph holds its place; deleted: its document or collection was deleted; hidden: an editor hid it",
    )
    at = serializers.DateTimeField(
        allow_null=True, help_text="when it left the serving build (null for a hidden one: see its edit history)"
    )


class CitationFactsOutput(serializers.Serializer):
    paragraph_id = serializers.CharField(help_text="as sent")
    exists = serializers.BooleanField(
        help_text="a paragraph this key can reach (or was shown in the named search); another tenant's id, one "
        "outside this key's collections and an invented one all answer false"
    )
    current = serializers.BooleanField(
        allow_null=True, help_text="still in the serving build (false: see `retired`); null when it does not exist"
    )
    retired = RetiredOutput(allow_null=True, help_text="how and when it left the serving build; null while current")
    surfaced = serializers.BooleanField(
        allow_null=True,
        help_text="returned to this caller in the named search (matched, or stitched in as a neighbour); null "
        "without a search_id",
    )
    readable = serializers.BooleanField(
        allow_null=True,
        help_text="readable now by the search's reader (or `reader`); null when it is not current",
    )
    quote = serializers.ChoiceField(
        choices=["exact", "normalised", "absent"],
        allow_null=True,
        help_text="exact: the quote is in the paragraph as written; normalised: it is once both are Unicode "
        "(NFKC) normalised, case-folded and their whitespace collapsed; absent: it is not. Null: no quote sent, "
        "or the paragraph is not readable (a quote is never checked against words the caller may not read)",
    )
    similarity = serializers.FloatField(
        allow_null=True,
        help_text="0-1: how close the paragraph's most similar passage comes to the quote (1.0 when found)",
    )


class CitationsVerifyOutput(serializers.Serializer):
    citations = CitationFactsOutput(many=True, help_text="one per citation sent, in its order")
    check_id = serializers.UUIDField(help_text="the record of this check (counts only), under its search's audit")


class CitationsVerifyView(APIView):
    """Check an answer's citations: facts only, never a paragraph's text."""

    throttle_classes = [SearchThrottle]

    @extend_schema(
        summary="Check an answer's citations: real, current, surfaced, readable, quoted",
        description="Each citation's facts, kept apart: whether the paragraph exists for this key, is still "
        "served (or was replaced or deleted, and when), was returned in the named search, is readable by its "
        "reader, and holds the quoted words. No text is returned. A check counts against the key's search rate limit.",
        request=CitationsVerifyInput,
        examples=[
            OpenApiExample("Citations of an answer", value=examples.CITATIONS_REQUEST, request_only=True),
            OpenApiExample("Checked", value=examples.CITATIONS_CHECKED, response_only=True, status_codes=["200"]),
        ],
        responses={200: CitationsVerifyOutput, **refusals(*NEW_BODY, 429)},
    )
    def post(self, request: Request) -> Response:
        data = CitationsVerifyInput(data=request.data)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        key = request_key(request)
        agent = on_behalf_of_agent(tenant_id=key.tenant_id, name=params.get("on_behalf_of"))
        search_id = params.get("search_id")
        checked = citations_verify(
            key=key,
            citations=[Citation(c["paragraph_id"], c.get("quote")) for c in params["citations"]],
            search_id=str(search_id) if search_id else None,
            reader=params.get("reader"),
            on_behalf_of=agent,
        )
        return Response({"citations": [f.to_json() for f in checked.citations], "check_id": checked.check.pk})
