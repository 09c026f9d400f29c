"""Zip imports: every member a document; what is not imported is named; bombs are refused before extraction."""

from __future__ import annotations

import ast
import io
from pathlib import Path
from typing import Any

import pytest
from django_q.models import Schedule

from collections_app.models import Build, Document
from collections_app.services.archives import archive_build_record
from collections_app.services.documents import document_create
from tests.files.archives import DELIVERY, HANDBOOK_ZIP, RETURNS, zip_bytes


def test_each_member_of_a_zip_with_nested_folders_becomes_a_document(cast, collection, upload):
    response = upload(cast.editor, collection, "handbook.zip", zip_bytes(HANDBOOK_ZIP))

    assert response.status_code == 202, response.content
    answer = response.json()
    assert answer["warnings"] == []
    assert sorted((d["filename"], d["created"]) for d in answer["documents"]) == [
        ("canteen.html", True),
        ("handbook/returns.md", True),
        ("handbook/shipping/delivery.txt", True),
    ]
    documents = Document.objects.filter(collection=collection)
    assert sorted(documents.values_list("source_uri", flat=True)) == [
        "upload://handbook.zip/canteen.html",
        "upload://handbook.zip/handbook/returns.md",
        "upload://handbook.zip/handbook/shipping/delivery.txt",
    ]
    assert all(d.status == "done" for d in documents), [d.error for d in documents]
    assert Document.objects.get(filename="delivery.txt").chunks.filter(text__contains="warehouse").exists()
    # One Build sums the import up, besides each member's own.
    summary = Build.objects.get(collection=collection, document=None)
    assert summary.built_from.startswith("upload by ")
    assert summary.refused == []
    assert summary.passages == sum(d.chunks.count() for d in documents) > 0


def test_the_same_zip_twice_answers_200_with_each_member_already_held(cast, collection, upload):
    first = upload(cast.editor, collection, "handbook.zip", zip_bytes(HANDBOOK_ZIP)).json()

    again = upload(cast.editor, collection, "handbook.zip", zip_bytes(HANDBOOK_ZIP))

    assert again.status_code == 200
    held = again.json()["documents"]
    assert [d["created"] for d in held] == [False, False, False]
    assert {d["document_id"] for d in held} == {d["document_id"] for d in first["documents"]}
    assert {d["status"] for d in held} == {"done"}
    assert Document.objects.filter(collection=collection).count() == 3


def test_members_matching_the_exclude_patterns_are_skipped_and_named(cast, collection, upload):
    collection.exclude_patterns = ["**/README.md", "drafts/"]
    collection.save()
    content = zip_bytes(
        {
            "README.md": b"# Index\n\nSee the pages below.\n",
            "guide/README.md": b"# Guide index\n\nLinks only.\n",
            "drafts/returns.md": b"# Draft\n\nNot ready yet at all.\n",
            "guide/returns.md": RETURNS,
        }
    )

    answer = upload(cast.editor, collection, "site.zip", content).json()

    assert [d["filename"] for d in answer["documents"]] == ["guide/returns.md"]
    assert len(answer["warnings"]) == 1
    assert "README.md, guide/README.md, drafts/returns.md" in answer["warnings"][0]
    assert list(Document.objects.values_list("filename", flat=True)) == ["returns.md"]


def test_encrypted_oversize_unsupported_and_nested_members_are_named_in_warnings(cast, collection, upload, settings):
    settings.KB_MAX_UPLOAD_BYTES = 4000
    content = zip_bytes(
        {
            "returns.md": RETURNS,
            "secret.txt": b"The safe code is written nowhere at all.\n",
            "big.txt": b"All work and no play makes a dull boy.\n" * 200,  # 7,800 bytes unpacked
            "tools/setup.exe": b"MZ\x90\x00",
            "inner.zip": zip_bytes({"a.txt": DELIVERY}),
        },
        encrypted=("secret.txt",),
    )

    response = upload(cast.editor, collection, "mixed.zip", content)

    assert response.status_code == 202
    answer = response.json()
    assert [d["filename"] for d in answer["documents"]] == ["returns.md"]
    warnings = " | ".join(answer["warnings"])
    assert "secret.txt not imported: it is encrypted" in warnings
    assert "big.txt not imported: it is larger than the upload limit of 4000 bytes" in warnings
    assert "tools/setup.exe not imported: files of type .exe are not accepted" in warnings
    assert "inner.zip not imported: zips inside a zip are not unpacked" in warnings
    summary = Build.objects.get(collection=collection, document=None)
    assert sorted(summary.refused or []) == ["big.txt", "inner.zip", "secret.txt", "setup.exe"]


def test_members_whose_paths_climb_out_of_the_zip_are_named_in_the_answer_and_the_build(cast, collection, upload):
    content = zip_bytes({"returns.md": RETURNS, "../../x.txt": DELIVERY, "a/../../b.txt": DELIVERY})

    response = upload(cast.editor, collection, "climbing.zip", content)

    assert response.status_code == 202
    answer = response.json()
    assert [d["filename"] for d in answer["documents"]] == ["returns.md"]
    warnings = " | ".join(answer["warnings"])
    assert "../../x.txt not imported: its path leads outside the archive" in warnings
    assert "a/../../b.txt not imported: its path leads outside the archive" in warnings
    summary = Build.objects.get(collection=collection, document=None)
    assert sorted(summary.refused or []) == ["b.txt", "x.txt"]  # by name only, never the path


@pytest.mark.parametrize(
    ("limits", "members", "expected"),
    [
        ({"KB_MAX_ZIP_BYTES": 50_000}, {"a.txt": b"a" * 30_000, "b.txt": b"b" * 30_000}, "would unpack to 60000"),
        ({}, {"zeros.txt": b"\x00" * 3_000_000}, "zeros.txt is compressed more than 100 times"),
        # Small members are judged too: forty of just under 1 MiB once turned 65 KB of zip into 40 MiB.
        ({}, {f"z{i}.txt": b"\x00" * 1_000_000 for i in range(40)}, "z0.txt is compressed more than 100 times"),
        ({"KB_MAX_ZIP_MEMBERS": 3}, {f"n{i}.txt": DELIVERY for i in range(4)}, "holds 4 entries"),
    ],
    ids=["total-size", "ratio", "small-members-ratio", "members"],
)
def test_a_zip_bomb_is_refused_with_400_before_anything_is_extracted(
    cast, collection, upload, settings, limits, members, expected
):
    for name, value in limits.items():
        setattr(settings, name, value)

    response = upload(cast.editor, collection, "bomb.zip", zip_bytes(members))

    assert response.status_code == 400
    assert expected in response.json()["file"][0]
    assert not Document.objects.exists()
    assert not Build.objects.exists()
    storage = Path(settings.MEDIA_ROOT)
    assert not storage.exists() or not any(p.is_file() for p in storage.rglob("*"))


def test_a_zip_with_nothing_to_import_is_400_saying_why(cast, collection, upload):
    response = upload(cast.editor, collection, "tools.zip", zip_bytes({"setup.exe": b"MZ\x90\x00"}))

    assert response.status_code == 400
    assert "nothing in tools.zip could be imported: setup.exe not imported" in response.json()["file"][0]


def test_a_zip_import_takes_no_ingest_options(cast, collection, upload):
    response = upload(
        cast.editor, collection, "handbook.zip", zip_bytes(HANDBOOK_ZIP), ingest_options='{"labels": ["staff"]}'
    )

    assert response.status_code == 400
    assert "ingest_options" in response.json()
    assert not Document.objects.exists()


def test_a_file_named_zip_that_is_not_one_is_400(cast, collection, upload):
    response = upload(cast.editor, collection, "notes.zip", b"just some text, no archive")

    assert response.status_code == 400
    assert "notes.zip is named .zip but its content is plain text" in response.json()["file"][0]


def test_a_viewer_cannot_import_a_zip_and_an_outsider_cannot_find_the_collection(cast, collection, upload):
    assert upload(cast.viewer, collection, "handbook.zip", zip_bytes(HANDBOOK_ZIP)).status_code == 403
    assert upload(cast.outsider, collection, "handbook.zip", zip_bytes(HANDBOOK_ZIP)).status_code == 404
    assert not Document.objects.exists()


def test_the_import_build_waits_for_members_still_being_read(collection):
    # Not ingested: the test's transaction never commits, so the queued ingestion never runs.
    waiting = document_create(collection=collection, filename="a.txt", content=io.BytesIO(DELIVERY)).document
    arguments: dict[str, Any] = {
        "collection_id": str(collection.pk),
        "document_ids": [str(waiting.pk)],
        "refused": ["setup.exe"],
        "built_from": "upload by ada",
        "warnings": [],
    }

    assert archive_build_record(**arguments) is None
    again = Schedule.objects.get()
    assert again.func == "collections_app.tasks.record_archive_build"
    assert ast.literal_eval(again.args)[-1] == 1  # the next attempt

    build = archive_build_record(**arguments, attempt=10_000)  # past the last attempt: record what there is
    assert build is not None
    assert build.refused == ["setup.exe"]
    assert build.warnings == ["1 member(s) were still being read when this record was written"]
