"""Golden questions through the management API: add, read, change, remove, import and export."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from accounts.issuing import api_key_create
from accounts.models import Agent
from collections_app.services.collections import collection_create
from retrieval.models import GoldenQuestion
from tests.conftest import client_for
from tests.retrieval.services.golden.corpus import document, paragraph


def url(collection, rest: str = "") -> str:
    return f"/api/manage/collections/{collection.pk}/golden{rest}"


def upload_file(name: str, content: str | bytes) -> io.BytesIO:
    file = io.BytesIO(content.encode() if isinstance(content, str) else content)
    file.name = name
    return file


def test_an_editor_adds_lists_changes_and_removes_a_golden_question(cast, corpus) -> None:
    bikes = paragraph(corpus, "covered rack")
    added = cast.editor.post(
        url(corpus),
        {"question": " Where do I leave my bike? ", "markers": ["covered rack", "covered rack"],
         "paragraphs": [str(bikes.pk)], "documents": ["office.html"], "note": "from the handbook"},
        format="json",
    )  # fmt: skip
    assert added.status_code == 201, added.content
    body = added.json()
    assert body["question"] == "Where do I leave my bike?"
    assert body["markers"] == ["covered rack"]
    assert body["paragraphs"] == [str(bikes.pk)]
    assert body["documents"] == [str(document(corpus, "office.html").pk)]  # a file name is stored as its id
    control = cast.editor.post(url(corpus), {"question": "Who won the 1998 World Cup?", "control": True}, format="json")
    assert control.status_code == 201 and control.json()["control"] is True

    listed = cast.editor.get(url(corpus), {"limit": 1}).json()
    assert listed["count"] == 2 and [q["question"] for q in listed["results"]] == ["Where do I leave my bike?"]
    assert cast.editor.get(url(corpus), {"limit": 1, "offset": 1}).json()["results"][0]["control"] is True

    entrance = {"markers": ["next to the main entrance"]}
    changed = cast.editor.patch(url(corpus, f"/{body['id']}"), entrance, format="json")
    assert changed.status_code == 200 and changed.json()["markers"] == ["next to the main entrance"]
    assert changed.json()["paragraphs"] == [str(bikes.pk)]  # what the PATCH did not name stays
    assert cast.editor.get(url(corpus, f"/{body['id']}")).json()["note"] == "from the handbook"
    assert cast.editor.delete(url(corpus, f"/{body['id']}")).status_code == 204
    assert cast.editor.get(url(corpus, f"/{body['id']}")).status_code == 404


@pytest.mark.parametrize(
    ("sent", "field", "words"),
    [
        ({"question": "   ", "markers": ["x"]}, "question", "must not be empty"),
        ({"question": "Where?"}, "markers", "say what counts as the answer"),
        ({"question": "Where?", "markers": ["rack"], "control": True}, "control", "nothing should answer"),
        ({"question": "Where?", "markers": ["  "]}, "markers", "must not be empty"),
        ({"question": "Where?", "paragraphs": ["not-an-id"]}, "paragraphs", "is not a paragraph id"),
        ({"question": "Where?", "documents": ["nowhere.pdf"]}, "documents", "names no document of this collection"),
        ({"question": "q" * 4001, "markers": ["x"]}, "question", "at most 4000 characters"),
    ],
)
def test_a_golden_question_that_cannot_be_used_is_a_400_naming_the_field(cast, corpus, sent, field, words) -> None:
    answer = cast.editor.post(url(corpus), sent, format="json")
    assert answer.status_code == 400, answer.content
    assert words in answer.json()[field][0]


def test_a_paragraph_or_document_of_another_collection_is_refused_as_unknown(cast, corpus, upload) -> None:
    other = collection_create(tenant=cast.tenant, name="elsewhere")
    upload(cast.editor, other, "office.html", b"<h2>Bikes</h2><p>Bikes go in the basement.</p>")
    theirs = paragraph(other, "basement")
    answer = cast.editor.post(url(corpus), {"question": "Bikes?", "paragraphs": [str(theirs.pk)]}, format="json")
    assert answer.status_code == 400
    assert answer.json()["paragraphs"] == [f"{theirs.pk} is not a paragraph of this collection (ids come from a "
                                           "search's chunk_id)"]  # fmt: skip
    their_document = str(theirs.document_id)
    answer = cast.editor.post(url(corpus), {"question": "Bikes?", "documents": [their_document]}, format="json")
    assert answer.status_code == 400 and "names no document of this collection" in answer.json()["documents"][0]


def test_the_same_question_twice_is_a_409(cast, corpus) -> None:
    sent = {"question": "Where do I leave my bike?", "markers": ["rack"]}
    assert cast.editor.post(url(corpus), sent, format="json").status_code == 201
    assert cast.editor.post(url(corpus), sent, format="json").status_code == 409


def test_only_editors_reach_golden_questions_and_never_another_tenants_or_out_of_scope(cast, corpus) -> None:
    golden = GoldenQuestion.objects.create(tenant=cast.tenant, collection=corpus, question="Bikes?", markers=["rack"])
    assert cast.viewer.get(url(corpus)).status_code == 403
    assert cast.admin.get(url(corpus)).status_code == 200
    for path in ("", f"/{golden.pk}", "/jsonl", "/beir"):
        assert cast.outsider.get(url(corpus, path)).status_code == 404, path
    # An editor key of an agent that reaches another collection only: this one does not exist for it.
    scoped = Agent.objects.create(tenant=cast.tenant, name="scoped")
    scoped.collections.add(collection_create(tenant=cast.tenant, name="scoped-only"))
    agent_editor = client_for(api_key_create(tenant=cast.tenant, role="editor", agent=scoped).secret)
    assert agent_editor.get(url(corpus)).status_code == 404
    assert agent_editor.post(f"/api/manage/collections/{corpus.pk}/evaluate", {}, format="json").status_code == 404
    assert agent_editor.get(f"/api/manage/collections/{corpus.pk}/evaluations").status_code == 404


# --- import and export --------------------------------------------------------------------------------


QUERIES = [
    {"_id": "q1", "text": "Where do cyclists lock their bikes?"},
    {"_id": "q2", "text": "How much is the daily allowance abroad?"},
    {"_id": "q3", "text": "Which hotel costs are refunded?", "metadata": {"note": "capitals differ"}},
    {"_id": "q4", "text": "A question of another split"},
]
QRELS = "query-id\tcorpus-id\tscore\nq1\toffice\t1\nq2\ttravel\t1\nq3\ttravel.html\t1\nq3\toffice\t0\n"


def beir_import(client, collection, queries=QUERIES, qrels=QRELS, **extra):
    lines = "".join(json.dumps(q) + "\n" for q in queries)
    return client.post(
        url(collection, "/beir"),
        {"queries": upload_file("queries.jsonl", lines), "qrels": upload_file("test.tsv", qrels), **extra},
        format="multipart",
    )


def beir_export(client, collection) -> tuple[dict[str, str], set[tuple[str, str]]]:
    response = client.get(url(collection, "/beir"))
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        queries = [json.loads(line) for line in archive.read("queries.jsonl").decode().splitlines()]
        qrels = archive.read("qrels/test.tsv").decode().splitlines()
    assert qrels[0] == "query-id\tcorpus-id\tscore"
    text_of = {q["_id"]: q["text"] for q in queries}
    return text_of, {(text_of[line.split("\t")[0]], line.split("\t")[1]) for line in qrels[1:]}


def test_beir_in_then_out_keeps_the_same_judgements(cast, corpus) -> None:
    imported = beir_import(cast.editor, corpus)
    assert imported.status_code == 200, imported.content
    # q4 judges nothing (another split's question); q3's score-0 line is not a judgement.
    assert imported.json() == {"created": 3, "updated": 0, "skipped": 1,
                               "skipped_reasons": ["queries line 4: no judgement"]}  # fmt: skip
    hotel = GoldenQuestion.objects.get(collection=corpus, question="Which hotel costs are refunded?")
    assert hotel.documents == [document(corpus, "travel.html").pk] and hotel.note == "capitals differ"

    _, judgements = beir_export(cast.editor, corpus)
    assert judgements == {
        ("Where do cyclists lock their bikes?", "office"),
        ("How much is the daily allowance abroad?", "travel"),
        ("Which hotel costs are refunded?", "travel"),
    }

    # And in again, into a fresh collection holding the same documents: the same judgements.
    again = collection_create(tenant=cast.tenant, name="copy")
    for name in ("office.html", "travel.html"):
        original = document(corpus, name)
        original.pk = None
        original.collection = again
        original.save()
    response = cast.editor.get(url(corpus, "/beir"))
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        queries, qrels = archive.read("queries.jsonl"), archive.read("qrels/test.tsv")
    reimported = cast.editor.post(
        url(again, "/beir"),
        {"queries": upload_file("queries.jsonl", queries), "qrels": upload_file("test.tsv", qrels)},
        format="multipart",
    )
    assert reimported.status_code == 200 and reimported.json()["created"] == 3
    assert beir_export(cast.editor, again)[1] == judgements


def test_beir_keeps_markers_paragraphs_and_controls_in_the_query_metadata(cast, corpus) -> None:
    rack = paragraph(corpus, "covered rack")
    GoldenQuestion.objects.create(tenant=cast.tenant, collection=corpus, question="Bikes?", markers=["rack"],
                                  paragraphs=[rack.pk])  # fmt: skip
    GoldenQuestion.objects.create(tenant=cast.tenant, collection=corpus, question="Capital of Peru?", control=True)
    response = cast.editor.get(url(corpus, "/beir"))
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        queries, qrels = archive.read("queries.jsonl"), archive.read("qrels/test.tsv")
    GoldenQuestion.objects.filter(collection=corpus).delete()
    assert (
        beir_import(cast.editor, corpus, [json.loads(q) for q in queries.splitlines()], qrels.decode()).json()[
            "created"
        ]
        == 2
    )
    bikes = GoldenQuestion.objects.get(collection=corpus, question="Bikes?")
    assert (bikes.markers, bikes.paragraphs, bikes.control) == (["rack"], [rack.pk], False)
    assert GoldenQuestion.objects.get(collection=corpus, question="Capital of Peru?").control is True


def test_a_beir_file_that_does_not_parse_or_names_unknown_documents_says_which_line(cast, corpus) -> None:
    broken = cast.editor.post(
        url(corpus, "/beir"),
        {"queries": upload_file("q.jsonl", '{"_id": "q1", "text": "Bikes?"}\n{"_id": "q2", "text": \n'),
         "qrels": upload_file("t.tsv", QRELS)},
        format="multipart",
    )  # fmt: skip
    assert broken.status_code == 400 and "queries line 2: not JSON" in broken.json()["queries"][0]

    unknown = beir_import(cast.editor, corpus, qrels="q1\toffice\t1\nq2\tdoc-404\t1\nq3\ttravel\tyes\n")
    assert unknown.status_code == 400
    message = unknown.json()["qrels"][0]
    assert "qrels line 2: corpus-id 'doc-404' names no document of this collection" in message
    assert "qrels line 3: score 'yes' is not a whole number" in message
    assert not GoldenQuestion.objects.filter(collection=corpus).exists()  # all or nothing

    skipped = beir_import(cast.editor, corpus, qrels="q1\toffice\t1\nq2\tdoc-404\t1\n", skip_unknown=True).json()
    assert (
        skipped["created"] == 1 and "qrels line 2: corpus-id 'doc-404' names no document" in skipped["skipped_reasons"]
    )


def test_json_lines_out_and_in_again_give_the_same_set(cast, corpus) -> None:
    rack = paragraph(corpus, "covered rack")
    travel = document(corpus, "travel.html")
    GoldenQuestion.objects.create(tenant=cast.tenant, collection=corpus, question="Bikes?", markers=["rack"],
                                  paragraphs=[rack.pk], note="n")  # fmt: skip
    GoldenQuestion.objects.create(tenant=cast.tenant, collection=corpus, question="Per diem?", documents=[travel.pk])
    GoldenQuestion.objects.create(tenant=cast.tenant, collection=corpus, question="Capital of Peru?", control=True)
    exported = cast.editor.get(url(corpus, "/jsonl"))
    assert exported.status_code == 200 and exported["Content-Type"] == "application/x-ndjson"
    before = [json.loads(line) for line in exported.content.decode().splitlines()]
    assert len(before) == 3

    GoldenQuestion.objects.filter(collection=corpus).delete()
    imported = cast.editor.post(url(corpus, "/jsonl"), {"file": upload_file("g.jsonl", exported.content)},
                                format="multipart")  # fmt: skip
    assert imported.status_code == 200 and imported.json()["created"] == 3
    after = [json.loads(line) for line in cast.editor.get(url(corpus, "/jsonl")).content.decode().splitlines()]
    assert after == before
    # The same file again updates what is held instead of doubling it.
    again = cast.editor.post(url(corpus, "/jsonl"), {"file": upload_file("g.jsonl", exported.content)},
                             format="multipart")  # fmt: skip
    assert again.json()["created"] == 0 and again.json()["updated"] == 3


def test_a_json_lines_import_with_a_bad_line_names_it_and_writes_nothing(cast, corpus) -> None:
    lines = '{"question": "Bikes?", "markers": ["rack"]}\n{"question": "Lunch?"}\n{"question": "x", "colour": 1}\n'
    answer = cast.editor.post(url(corpus, "/jsonl"), {"file": upload_file("g.jsonl", lines)}, format="multipart")
    assert answer.status_code == 400
    message = answer.json()["file"][0]
    assert "file line 2: markers: say what counts as the answer" in message
    assert "file line 3: unknown field 'colour'" in message
    assert not GoldenQuestion.objects.filter(collection=corpus).exists()
