"""Spreadsheets, delimited text and structured data as records; the collection's metadata schema."""

from __future__ import annotations

import json
import threading
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, transaction

from collections_app.models import Chunk, Collection, Document
from collections_app.services.ingest_options import InvalidIngestOptions
from collections_app.services.metadata_schema import collection_schema_declare
from ingestion.records import parse_records, validate_options
from tests.files.records import HEADER, csv_bytes, issue_rows, ods_bytes, xlsx_bytes

ISSUES: list[list[Any]] = [
    ["id", "title", "status", "opened_on", "estimate"],
    [1, "Login fails after password change", "open", date(2026, 1, 5), 3],
    [2, "Invoice export is empty", "closed", date(2026, 1, 9), 1.5],
    [3, "Search ignores accents", "open", date(2026, 2, 1), 8],
    [4, "Avatar upload times out", "closed", date(2026, 2, 3), 2],
]


def parse(tmp_path: Path, name: str, content: bytes, **options):
    path = tmp_path / name
    path.write_bytes(content)
    return parse_records(path, path.suffix, options)


def ingest(cast, collection, upload, name: str, content: bytes, **options) -> Document:
    extra = {"ingest_options": json.dumps(options)} if options else {}
    response = upload(cast.editor, collection, name, content, **extra)
    assert response.status_code == 202, response.content
    document = Document.objects.get(pk=response.json()["document_id"])
    assert document.status == "done", document.error
    return document


def chunks_of(document: Document) -> list[Chunk]:
    return list(Chunk.objects.filter(document=document).order_by("position__ordinal"))


# --- parsing, without the database --------------------------------------------------------------------------


def test_semicolon_csv_in_windows_1252_is_sniffed_and_says_how_it_was_read(tmp_path):
    rows = issue_rows(6)
    rows[0]["title"] = "Café menu shows “undefined”; prices missing"
    result = parse(tmp_path, "issues.csv", csv_bytes(rows, delimiter=";", encoding="cp1252"))

    assert len(result.blocks) == 6
    assert "title: Café menu shows “undefined”; prices missing" in result.blocks[0].text
    assert result.warnings == ["the file is not UTF-8; it was read as Windows-1252"]


def test_utf8_with_a_byte_order_mark_and_quoted_newlines_keep_the_header_and_line_numbers(tmp_path):
    content = '\ufeffid,note,n\n1,"two\nlines",5\n\n2,plain,x\n'.encode()
    result = parse(tmp_path, "notes.csv", content)

    assert [c["name"] for c in result.columns] == ["id", "note", "n"]
    assert result.blocks[0].text.startswith("id: 1\nnote: two\nlines")
    # Data rows count from 1 below the header; the file line is where the row starts.
    assert [where for _, where, _ in result.record_rows] == [
        "row 1 of the data (line 2 of the file)",
        "row 2 of the data (line 5 of the file)",
    ]


def test_roles_are_proposed_from_the_values(tmp_path):
    result = parse(tmp_path, "issues.csv", csv_bytes(issue_rows(200)))

    proposed = {c["name"]: c["proposed"] for c in result.columns}
    types = {c["name"]: c["type"] for c in result.columns}
    assert proposed == {
        "id": "both",
        "title": "index",
        "status": "both",
        "priority": "both",
        "opened_on": "both",
        "estimate": "both",
        "description": "index",
    }
    assert types == {
        "id": "number",
        "title": "string",
        "status": "enum",
        "priority": "enum",
        "opened_on": "date",
        "estimate": "number",
        "description": "string",
    }
    first = result.blocks[0]
    assert first.kind == "record"
    assert first.text.splitlines()[0] == "id: 1" and "description: The " in first.text
    assert set(first.metadata) == {"id", "status", "priority", "opened_on", "estimate"}
    assert isinstance(first.metadata["estimate"], int | float) and len(first.metadata["opened_on"]) == 10


def test_given_roles_win_and_unknown_columns_are_named(tmp_path):
    result = parse(
        tmp_path,
        "issues.csv",
        csv_bytes(issue_rows(3)),
        column_roles={"description": "ignore", "title": "metadata", "colour": "both"},
    )
    first = result.blocks[0]
    assert "description" not in first.text and "title" not in first.text
    assert "title" in first.metadata
    assert result.warnings == ["column_roles names columns this file does not have: colour"]


def test_sheet_mode_is_one_markdown_table_per_sheet(tmp_path):
    result = parse(tmp_path, "issues.xlsx", xlsx_bytes({"Issues": ISSUES, "Empty": []}), table_mode="sheet")

    assert len(result.blocks) == 1
    table = result.blocks[0]
    assert table.kind == "table" and table.section == ["Issues"] and table.page == 1
    assert table.text.splitlines()[0] == "| id | title | status | opened_on | estimate |"
    assert "| 2 | Invoice export is empty | closed | 2026-01-09 | 1.5 |" in table.text


def test_options_are_validated_with_a_message_naming_the_problem():
    assert validate_options({"table_mode": "sheet", "records_path": " data.items "}) == {
        "table_mode": "sheet",
        "records_path": "data.items",
    }
    with pytest.raises(InvalidIngestOptions, match="table_mode 'rows' is not one of: records, sheet"):
        validate_options({"table_mode": "rows"})
    with pytest.raises(InvalidIngestOptions, match="column 'status' has role 'filter'"):
        validate_options({"column_roles": {"status": "filter"}})
    with pytest.raises(InvalidIngestOptions, match="records_path must be a dotted path"):
        validate_options({"records_path": "data..items"})


@pytest.mark.parametrize(
    ("name", "content", "error"),
    [
        ("broken.json", b'{"a": [1, 2,', "the JSON is not valid: Expecting value (line 1, column 13)"),
        ("broken.yaml", b"a: [1, 2\nb: c\n", "the YAML is not valid: expected ',' or ']', but got ':' (line 2"),
        ("broken.xml", b"<a><b></a>", "the XML is not well-formed (mismatched tag: line 1, column 8)"),
    ],
)
def test_a_file_that_does_not_parse_says_where_in_the_file_not_where_on_the_server(tmp_path, name, content, error):
    from ingestion import NothingReadable

    with pytest.raises(NothingReadable) as raised:
        parse(tmp_path, name, content)
    assert str(raised.value).startswith(error)
    assert str(tmp_path) not in str(raised.value)


def test_a_cyclic_yaml_alias_bomb_is_refused_not_expanded(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    from ingestion import NothingReadable

    with pytest.raises(NothingReadable, match="more than 2,000,000 values"):
        parse(tmp_path, "bomb.yaml", "\n".join(lines).encode())


# --- ingestion through the API ------------------------------------------------------------------------------


def test_xlsx_sheets_become_records_with_their_sheet_as_page_and_section(cast, collection, upload):
    people = [["name", "team"], ["Ada", "core"], ["Grace", "core"], ["Linus", "infra"]]
    document = ingest(cast, collection, upload, "tracker.xlsx", xlsx_bytes({"Issues": ISSUES, "People": people}))

    chunks = chunks_of(document)
    assert len(chunks) == 7
    login = next(c for c in chunks if "Login fails" in c.text)
    assert login.page == 1 and login.section == ["Issues"]
    assert login.metadata == {"id": 1, "status": "open", "opened_on": "2026-01-05", "estimate": 3}
    grace = next(c for c in chunks if "Grace" in c.text)
    assert grace.page == 2 and grace.section == ["People"] and grace.text == "name: Grace\nteam: core"

    collection.refresh_from_db()
    assert collection.metadata_schema["status"] == {"type": "enum", "values": ["closed", "open"]}
    assert collection.metadata_schema["opened_on"] == {"type": "date"}
    assert collection.metadata_schema["estimate"] == {"type": "number"}
    assert document.ingest_options["column_roles"]["title"] == "index"
    assert {c["name"] for c in document.ingest_options["columns"]} == {
        "id", "title", "status", "opened_on", "estimate", "name", "team",
    }  # fmt: skip


def test_xls_sheets_become_records(cast, collection, upload):
    # tests/data/issues.xls was written once by xlwt (xlrd reads .xls but nothing maintained writes it).
    content = (Path(__file__).parents[1] / "data" / "issues.xls").read_bytes()
    document = ingest(cast, collection, upload, "issues.xls", content)

    chunks = chunks_of(document)
    assert len(chunks) == 6
    assert chunks[1].metadata == {"id": 2, "status": "closed", "opened_on": "2026-01-09", "estimate": 1.5}
    assert chunks[1].page == 1 and chunks[1].section == ["Issues"]
    assert chunks[4].text == "name: Ada\nactive: true" and chunks[4].section == ["People"]


def test_the_collection_shows_its_metadata_schema(cast, collection, upload):
    ingest(cast, collection, upload, "issues.ods", ods_bytes({"Issues": ISSUES}))

    schema = cast.viewer.get(f"/api/manage/collections/{collection.pk}").json()["metadata_schema"]
    assert schema == {
        "id": {"type": "number"},
        "status": {"type": "enum", "values": ["closed", "open"]},
        "opened_on": {"type": "date"},
        "estimate": {"type": "number"},
    }


def test_ods_rows_are_records(cast, collection, upload):
    document = ingest(cast, collection, upload, "issues.ods", ods_bytes({"Issues": ISSUES}))

    chunks = chunks_of(document)
    assert [c.metadata["id"] for c in chunks] == [1, 2, 3, 4]
    assert chunks[1].metadata == {"id": 2, "status": "closed", "opened_on": "2026-01-09", "estimate": 1.5}
    assert chunks[1].section == ["Issues"]


def test_tsv_rows_are_records(cast, collection, upload):
    document = ingest(cast, collection, upload, "issues.tsv", csv_bytes(issue_rows(20), delimiter="\t"))

    chunks = chunks_of(document)
    assert len(chunks) == 20
    assert chunks[0].text.startswith("id: 1\ntitle: ")
    assert set(chunks[0].metadata) == {"id", "status", "priority", "opened_on", "estimate"}


def test_a_json_array_of_objects_is_records_with_nested_keys_dotted(cast, collection, upload):
    items = [
        {"sku": "A-100", "name": "Desk lamp", "price": 19.5, "owner": {"team": "home"}, "tags": ["light", "desk"]},
        {"sku": "A-101", "name": "Office chair", "price": 129, "owner": {"team": "office"}, "tags": []},
    ]
    document = ingest(cast, collection, upload, "products.json", json.dumps(items).encode())

    chunks = chunks_of(document)
    assert len(chunks) == 2
    assert chunks[0].text == "sku: A-100\nname: Desk lamp\nprice: 19.5\nowner.team: home\ntags: light, desk"
    # Two rows: every short value is unique, so owner.team looks like a code (both) to the proposal.
    assert chunks[0].metadata == {"sku": "A-100", "price": 19.5, "owner.team": "home"}
    assert chunks[1].metadata["price"] == 129


def test_a_yaml_records_path_points_at_the_array_inside(cast, collection, upload):
    content = b"""
service: billing
oncall:
  rotation:
    - person: Ada
      week: 2026-01-05
    - person: Grace
      week: 2026-01-12
"""
    document = ingest(cast, collection, upload, "oncall.yaml", content, records_path="oncall.rotation")

    chunks = chunks_of(document)
    assert [c.text for c in chunks] == ["person: Ada\nweek: 2026-01-05", "person: Grace\nweek: 2026-01-12"]
    assert chunks[1].metadata["week"] == "2026-01-12"
    assert "service" not in " ".join(c.text for c in chunks)


def test_a_records_path_that_leads_nowhere_ends_in_error_saying_what_is_there(cast, collection, upload):
    response = upload(
        cast.editor,
        collection,
        "oncall.yaml",
        b"oncall:\n  rotation: []\n",
        ingest_options=json.dumps({"records_path": "oncall.people"}),
    )
    document = Document.objects.get(pk=response.json()["document_id"])
    assert document.status == "error"
    assert document.error == 'records_path "oncall.people" was not found: oncall has no "people"; its keys: rotation'


def test_a_nested_json_is_flattened_by_path_so_a_paragraph_knows_where_it_came_from(cast, collection, upload):
    config = {
        "service": "billing",
        "database": {
            "host": "db1.internal",
            "port": 5432,
            "replicas": [{"host": "db2.internal", "lag_ms": 40}, {"host": "db3.internal", "lag_ms": 55}],
        },
        "cache": {"ttl_seconds": 300},
    }
    document = ingest(cast, collection, upload, "billing.json", json.dumps(config).encode())

    replicas = Chunk.objects.get(document=document, text__contains="db2.internal")
    assert replicas.section == ["database", "replicas"]
    assert replicas.text == "host: db2.internal\nlag_ms: 40\n\nhost: db3.internal\nlag_ms: 55"
    assert Chunk.objects.get(document=document, text__contains="db1.internal").section == ["database"]
    assert Chunk.objects.get(document=document, text__contains="ttl_seconds").section == ["cache"]
    assert not any(c.metadata for c in chunks_of(document))


def test_xml_is_flattened_by_element_path(cast, collection, upload):
    content = b"""<?xml version="1.0"?>
<config xmlns="urn:example">
  <name>billing</name>
  <database engine="postgresql">
    <host>db1.internal</host>
    <replicas><replica host="db2.internal" lag="40"/><replica host="db3.internal" lag="55"/></replicas>
  </database>
</config>"""
    document = ingest(cast, collection, upload, "billing.xml", content)

    replica = Chunk.objects.get(document=document, text__contains="db2.internal")
    assert replica.section == ["database", "replicas", "replica"]
    assert replica.text == "host: db2.internal\nlag: 40\n\nhost: db3.internal\nlag: 55"
    assert Chunk.objects.get(document=document, text__contains="db1.internal").text == (
        "engine: postgresql\nhost: db1.internal"
    )


def test_xml_with_entities_ends_in_error_without_expanding_them(cast, collection, upload):
    content = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa">]><x>&a;&a;</x>'
    response = upload(cast.editor, collection, "bomb.xml", content)
    document = Document.objects.get(pk=response.json()["document_id"])
    assert document.status == "error"
    assert "declares entities" in document.error


def test_sheet_mode_keeps_a_table_whole(cast, collection, upload):
    collection.chunk_size = 3000
    collection.save()
    document = ingest(cast, collection, upload, "issues.csv", csv_bytes(issue_rows(8)), table_mode="sheet")

    chunks = chunks_of(document)
    assert len(chunks) == 1
    lines = chunks[0].text.splitlines()
    assert lines[0] == "| " + " | ".join(HEADER) + " |"
    assert len(lines) == 2 + 8
    collection.refresh_from_db()
    assert collection.metadata_schema == {}  # a table has no per-row metadata


def test_a_sheet_too_long_for_one_chunk_is_split_between_rows_repeating_the_header(cast, collection, upload):
    collection.chunk_size, collection.chunk_overlap = 600, 0
    collection.save()
    document = ingest(cast, collection, upload, "issues.csv", csv_bytes(issue_rows(12)), table_mode="sheet")

    chunks = chunks_of(document)
    assert len(chunks) > 1
    for chunk in chunks:
        lines = chunk.text.splitlines()
        assert lines[0].startswith("| id | title |") and lines[1].startswith("| --- |")
        assert all(line.startswith("| ") and line.endswith(" |") for line in lines)
    rows = [line for c in chunks for line in c.text.splitlines()[2:]]
    assert len(rows) == 12


def test_a_changed_role_re_parses_only_after_confirmation(cast, collection, upload, django_capture_on_commit_callbacks):
    document = ingest(cast, collection, upload, "issues.csv", csv_bytes(issue_rows(12)))
    url = f"/api/manage/collections/{collection.pk}/documents/{document.pk}/ingest-options"
    assert "status" in chunks_of(document)[0].metadata

    refused = cast.editor.patch(url, {"column_roles": {"status": "index"}}, format="json")
    assert refused.status_code == 409
    assert "manual chunk edits and per-block decisions" in refused.json()["detail"]
    document.refresh_from_db()
    assert document.ingest_options["column_roles"]["status"] == "both"

    with django_capture_on_commit_callbacks(execute=True):
        accepted = cast.editor.patch(url, {"column_roles": {"status": "index"}, "confirm_reparse": True}, format="json")
    assert accepted.status_code == 202

    document.refresh_from_db()
    assert document.status == "done", document.error
    assert document.ingest_options["column_roles"]["status"] == "index"
    assert document.ingest_options["column_roles"]["priority"] == "both"  # the other roles stay as they were
    first = chunks_of(document)[0]
    assert "status" not in first.metadata and "status: " in first.text
    assert "priority" in first.metadata


def test_a_bad_role_is_400_naming_the_column(cast, collection, upload):
    document = ingest(cast, collection, upload, "issues.csv", csv_bytes(issue_rows(2)))
    url = f"/api/manage/collections/{collection.pk}/documents/{document.pk}/ingest-options"

    response = cast.editor.patch(url, {"column_roles": {"status": "filter"}, "confirm_reparse": True}, format="json")
    assert response.status_code == 400
    assert "column 'status' has role 'filter'" in str(response.json())


def test_a_later_value_that_does_not_fit_a_declared_column_is_a_warning_with_row_and_column(
    cast, collection, upload, settings
):
    ingest(cast, collection, upload, "january.csv", csv_bytes(issue_rows(4)))
    rows = issue_rows(4, seed=8)
    rows[2]["estimate"] = "soon"
    rows[3]["opened_on"] = "next week"
    rows[1]["status"] = "wontfix"  # an enum grows with later uploads: a new value is not an error
    document = ingest(cast, collection, upload, "february.csv", csv_bytes(rows))

    assert document.warnings == [
        "row 3 of the data (line 4 of the file), column estimate: 'soon' is not a number (the collection "
        "declares estimate as number); the value was left out of this row's metadata",
        "row 4 of the data (line 5 of the file), column opened_on: 'next week' is not a date (expected "
        "YYYY-MM-DD) (the collection declares opened_on as date); the value was left out of this row's metadata",
    ]
    chunks = chunks_of(document)
    assert len(chunks) == 4
    assert "estimate" not in chunks[2].metadata and "estimate: soon" in chunks[2].text
    assert "opened_on" not in chunks[3].metadata and chunks[3].metadata["estimate"] == rows[3]["estimate"]
    collection.refresh_from_db()
    assert collection.metadata_schema["estimate"] == {"type": "number"}  # it keeps its type
    assert "wontfix" in collection.metadata_schema["status"]["values"]
    assert str(settings.MEDIA_ROOT) not in json.dumps(document.warnings)


def test_a_row_whose_indexed_columns_are_empty_still_reads_as_its_metadata(tmp_path):
    result = parse(tmp_path, "m.csv", b"note,status\nhello,open\n,closed\n")
    assert [b.text for b in result.blocks] == ["note: hello\nstatus: open", "status: closed"]


@pytest.mark.django_db(transaction=True)
def test_two_uploads_declaring_at_once_never_lose_a_column(cast):
    """The second declaration waits for the first one's lock, then reads its columns before adding its own."""
    collection = Collection.objects.create(tenant=cast.tenant, name="race")
    first_holds_lock = threading.Event()
    errors: list[BaseException] = []

    def first() -> None:
        try:
            with transaction.atomic():
                collection_schema_declare(collection_id=collection.pk, values_by_key={"status": ["open", "open"]})
                first_holds_lock.set()
                threading.Event().wait(0.5)  # the second declaration starts while this one is uncommitted
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    def second() -> None:
        try:
            first_holds_lock.wait(5)
            collection_schema_declare(collection_id=collection.pk, values_by_key={"estimate": [1, 2]})
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert not errors
    collection.refresh_from_db()
    assert set(collection.metadata_schema) == {"status", "estimate"}


# --- admin: the column-roles editor -------------------------------------------------------------------------


def roles_form(document: Document, **changes: str) -> dict[str, str]:
    roles = document.ingest_options["column_roles"]
    data = {f"role_{i}": roles[c["name"]] for i, c in enumerate(document.ingest_options["columns"])}
    for name, role in changes.items():
        index = next(i for i, c in enumerate(document.ingest_options["columns"]) if c["name"] == name)
        data[f"role_{index}"] = role
    return {"table_mode": "records", **data}


def test_the_document_page_links_to_a_column_roles_table(cast, collection, upload, staff):
    document = ingest(cast, collection, upload, "issues.csv", csv_bytes(issue_rows(12)))

    change = staff.get(f"/admin/collections_app/document/{document.pk}/change/").content.decode()
    assert "edit column roles" in change and "7 columns, 5 filterable, read as records" in change
    page = staff.get(f"/admin/collections_app/document/{document.pk}/columns/")
    assert page.status_code == 200
    html = page.content.decode()
    for expected in ("opened_on", "enum: ", "number", "string (in this file)", "2025-", "both", "index"):
        assert expected in html
    assert "manual chunk edits and per-block decisions on it will be lost" in html


def test_a_role_changed_in_the_admin_re_parses_only_once_confirmed(
    cast, collection, upload, staff, django_capture_on_commit_callbacks
):
    document = ingest(cast, collection, upload, "issues.csv", csv_bytes(issue_rows(12)))
    url = f"/admin/collections_app/document/{document.pk}/columns/"

    unconfirmed = staff.post(url, roles_form(document, description="ignore"))
    assert unconfirmed.status_code == 200 and "errornote" in unconfirmed.content.decode()
    document.refresh_from_db()
    assert document.ingest_options["column_roles"]["description"] == "index" and document.blocks is not None

    with django_capture_on_commit_callbacks(execute=True):
        confirmed = staff.post(url, {**roles_form(document, description="ignore"), "confirm_reparse": "on"})
    assert confirmed.status_code == 302
    document.refresh_from_db()
    assert document.status == "done" and document.ingest_options["column_roles"]["description"] == "ignore"
    assert "description" not in chunks_of(document)[0].text


def test_it_hides_another_tenants_column_roles(cast, upload, staff):
    theirs = Collection.objects.create(tenant=cast.outsider_tenant, name="theirs")
    response = upload(cast.outsider, theirs, "issues.csv", csv_bytes(issue_rows(2)))
    url = f"/admin/collections_app/document/{response.json()['document_id']}/columns/"
    assert staff.get(url).status_code == 404
    assert staff.post(url, {"table_mode": "sheet", "confirm_reparse": "on"}).status_code == 404
