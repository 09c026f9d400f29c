from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from collections_app.services.collections import MAX_AROUND, MAX_NAME_CHARS, MAX_TOP_N
from doors.api.authentication import request_key
from doors.api.inputs import StrictInput
from doors.api.schema import LABEL_HELP, NEW_BODY, refusals
from doors.api.throttles import SearchThrottle
from infra.db_routing import read_only_call
from infra.validation import SafeJSONField
from retrieval.api import examples
from retrieval.api.examples import BADGE_HELP
from retrieval.selectors.search import SearchAnswer, SearchScope, resolve_scope, search
from retrieval.services.search_events import on_behalf_of_agent, search_event_record


@extend_schema_field(
    {
        "oneOf": [
            {"type": "number", "description": "the floor every searched collection used"},
            {
                "type": "object",
                "additionalProperties": {"type": "number"},
                "description": "collection name → its floor, when they differ",
            },
        ],
        "nullable": True,
        "description": "The semantic-score floor applied (0: off) to paragraphs in the question's language; null when "
        "no collection was searched. Without a collection floor (min_score), a paragraph in another language is "
        "judged by the model's cross-language floor: the trace's floor stage gives the floor that applied to the "
        "best paragraph, its score and the margin.",
    }
)
class FloorField(serializers.JSONField):
    pass


class SearchInput(StrictInput):
    query = serializers.CharField(
        max_length=4000,
        trim_whitespace=True,
        help_text="The question, in any language, as a person would ask it. Its language is detected (the trace's "
        "translation stage says which) and keywords are matched with that language's word forms; the embedding "
        "reads it whole.",
    )
    collections = serializers.ListField(
        child=serializers.CharField(max_length=MAX_NAME_CHARS),
        required=False,
        allow_empty=False,
        max_length=1000,
        help_text="Names of the collections to search. Narrows what this key may read (an agent key: its "
        "configured collections), never widens it; a name this key may not read is a 400 naming it. Absent: "
        "every collection the key may read.",
    )
    top_n = serializers.IntegerField(
        min_value=1,
        max_value=MAX_TOP_N,
        required=False,
        help_text="How many results at most (before neighbours are stitched in). Absent: the largest "
        "`rerank_top_n` of the searched collections (8 unless changed).",
    )
    around = serializers.IntegerField(
        min_value=0,
        max_value=MAX_AROUND,
        required=False,
        help_text="Neighbouring paragraphs stitched to each side of a match from the same document (0: the "
        "matched paragraph alone). Absent: the smallest `around` of the searched collections, else 1. The value "
        "used travels back as `around`.",
    )
    reader = serializers.CharField(
        required=False,
        max_length=MAX_NAME_CHARS,
        help_text="The registered reader this search is for (needed for per-reader collections); "
        "the server decides its labels. The key must act for this reader (reader delegation, set by an admin): "
        "any other is a 403.",
    )
    on_behalf_of = serializers.CharField(
        required=False,
        max_length=MAX_NAME_CHARS,
        help_text="The agent (by name, in this tenant) this search is made for: every model call it makes (judge, "
        "planner, remote embedding or rerank) is recorded and charged to it. Unknown: 400. Absent: nothing is "
        "charged.",
    )
    reader_labels = serializers.JSONField(
        required=False,
        write_only=True,
        help_text="Not accepted: a search may not say which labels it holds. Name a registered `reader`.",
    )
    expand = serializers.BooleanField(
        required=False,
        default=False,
        help_text="hierarchical collections: hand back each match's enclosing section (its readable paragraphs)",
    )
    hybrid_weight = serializers.FloatField(
        min_value=0,
        max_value=1,
        required=False,
        allow_null=True,
        help_text="0: keyword list only, 1: vector list only, 0.5: both equal; default: the collections' setting",
    )

    def validate_reader_labels(self, value: object) -> None:
        raise serializers.ValidationError(
            "a search may not name its own labels; register the reader (POST /api/manage/readers) "
            "and name it in `reader`"
        )

    filters = SafeJSONField(
        required=False,
        help_text='Metadata filters, e.g. {"status": "open", "opened_on": {"gte": "2026-01-01"}, '
        '"n": {"in": [1, 2]}}; operators eq (a bare value), gt, gte, lt, lte, in. Keys: the collections\' '
        "metadata schemas, plus author, created, language and document.",
    )


class SearchDocumentRef(serializers.Serializer):
    id = serializers.UUIDField(help_text="the document (GET /api/manage/collections/{id}/documents/{document_id})")
    filename = serializers.CharField(help_text="the name it was uploaded under (never a server path)")
    source_uri = serializers.CharField(help_text="where it came from: upload://<name>, http(s)://, mailto:, folder://")
    version = serializers.IntegerField(help_text="the document's version these paragraphs were read from")


class SearchMatch(serializers.Serializer):
    paragraph_id = serializers.UUIDField(help_text="the paragraph (chunk) that matched")
    start = serializers.IntegerField(help_text="where it starts in the result's `text` (a character offset)")
    end = serializers.IntegerField(help_text="where it ends in `text`: `text[start:end]` is the paragraph")
    score = serializers.FloatField(allow_null=True, help_text="its semantic score")


class SearchResult(serializers.Serializer):
    text = serializers.CharField(
        help_text="the paragraph, stitched with its neighbours (`around`) in document order: a paragraph break "
        "where a new block starts (a heading, a paragraph), a space where one block was cut; at most the "
        "collection's `window_max_chars` unless one paragraph is longer"
    )
    score = serializers.FloatField(allow_null=True, help_text="the best score of its matched paragraphs")
    collection = serializers.CharField(help_text="the collection's name")
    document = SearchDocumentRef()
    page = serializers.IntegerField(
        allow_null=True, help_text="the page of its best matched paragraph (PDF, slides); null: no pages"
    )
    section = serializers.ListField(
        child=serializers.CharField(), help_text="the heading trail of its best matched paragraph"
    )
    chunk_id = serializers.UUIDField(help_text="its best matched paragraph, the one it cites")
    language = serializers.CharField(
        allow_null=True, help_text=f"the paragraph's language ({LABEL_HELP}); null: undetected"
    )
    passages = serializers.IntegerField(help_text="how many paragraphs were stitched into `text`")
    matches = SearchMatch(
        many=True, help_text="the paragraphs in `text` that matched the question, best score first, by offset"
    )
    badge = serializers.ChoiceField(choices=["supported", "weak"], help_text=BADGE_HELP)
    metadata = serializers.DictField(help_text="the paragraph's metadata: a record's fields, an email's subject, ...")


class SearchStage(serializers.Serializer):
    stage = serializers.CharField(help_text="planning, translation, keyword retrieval, query embedding, ...")
    status = serializers.ChoiceField(choices=["ran", "skipped", "failed"])
    reason = serializers.CharField(required=False, help_text="why it was skipped or failed")
    counts = serializers.DictField(required=False, help_text="what it did: hits, candidates, the threshold, ...")
    ms = serializers.FloatField(help_text="milliseconds it took")


class SearchOutput(serializers.Serializer):
    results = SearchResult(many=True)
    refused = serializers.BooleanField(
        allow_null=True,
        help_text="null: this search could not refuse (no collection with a judge, no KB_LLM_URL, or the judge "
        "failed or timed out; the judge stage in `trace` says which); false: the judge approved the results; "
        "true: the judge said nothing here answers, so `results` is empty and `reason` is judge_refused",
    )
    floor = FloorField()
    around = serializers.IntegerField(help_text="the neighbours stitched to each side of a match")
    trace = SearchStage(many=True, help_text="every pipeline stage in order, ran, skipped or failed with a reason")
    reason = serializers.ChoiceField(
        choices=["no_collection", "no_readable_paragraph", "below_floor", "judge_refused"],
        allow_null=True,
        help_text="why results is empty (null when it is not): no collection was searched, nothing readable "
        "matched, every match scored under the floor, or the judge refused (what it withheld is kept in the "
        "search's audit record for the tenant's admins)",
    )
    retried = serializers.BooleanField(help_text="no result reached the threshold, so one broader pass ran")
    search_id = serializers.UUIDField(help_text="the audit record of this search (SearchEvent)")


class SearchView(APIView):
    """One call: cited paragraphs from the collections this key may read."""

    throttle_classes = [SearchThrottle]

    @extend_schema(
        summary="Search: cited paragraphs that answer a question",
        request=SearchInput,
        examples=[
            OpenApiExample(
                "A question over every collection the key may read",
                value={"query": "where do I secure my cycle?", "top_n": 5, "around": 1},
                request_only=True,
            ),
            OpenApiExample("Answered", value=examples.SEARCH_ANSWERED, response_only=True, status_codes=["200"]),
            OpenApiExample(
                "Nothing here answers: every match scored under the floor",
                value=examples.SEARCH_BELOW_FLOOR,
                response_only=True,
                status_codes=["200"],
            ),
            OpenApiExample(
                "Narrowed to one collection, for a registered reader, with a filter, charged to an agent",
                value={
                    "query": "how many days of annual leave?",
                    "collections": ["hr"],
                    "reader": "ada@example.com",
                    "filters": {"created": {"gte": "2026-01-01"}},
                    "hybrid_weight": 0.5,
                    "on_behalf_of": "support-bot",
                },
                request_only=True,
            ),
        ],
        responses={
            200: SearchOutput,
            **refusals(
                *NEW_BODY,
                409,
                429,
                conflict="a searched collection was built with a model of another width than the question's; "
                "rebuild it (re-index) with its current model",
                conflict_example="the question is embedded with 384 dimensions but archive (768 dimensions) were "
                "built with another model; rebuild those collections with their current embedding model",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        data = SearchInput(data=request.data)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        key = request_key(request)
        agent = on_behalf_of_agent(tenant_id=key.tenant_id, name=params.get("on_behalf_of"))

        def answer_it() -> tuple[SearchScope, SearchAnswer]:
            scope = resolve_scope(key=key, names=params.get("collections"), reader=params.get("reader"))
            return scope, search(
                scope=scope, query=params["query"], top_n=params.get("top_n"), around=params.get("around"),
                filters=params.get("filters"), hybrid_weight=params.get("hybrid_weight"),
                expand=params.get("expand", False),
            )  # fmt: skip

        # Reads only: from a read replica when one is fresh (infra/db_routing.py); the audit row is a write.
        (scope, answer), _served = read_only_call(answer_it)
        event = search_event_record(key=key, scope=scope, answer=answer, query=params["query"], on_behalf_of=agent)
        return Response(
            {
                "results": answer.results,
                "refused": answer.refused,
                "floor": answer.floor,
                "around": answer.around,
                "trace": [s.to_json() for s in answer.stages],
                "reason": answer.reason,
                "retried": answer.retried,
                "search_id": event.pk,
            }
        )
