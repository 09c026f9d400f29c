"""A tenant as an editor finds it after a week of work, for the browser tests of issue 41's findings 7-10 and the
walk over every admin link: a collection of two documents read for real (one a Markdown file with a lower-case
name), a copy of it imported from a collection file (documents with no original), a golden question and a control,
an evaluation, a measure of two designs, and searches (one answered, one not) in the audit; an editor of the tenant,
a superuser, and another tenant's collection nobody here may see.

Every task runs inline (test settings: django-q2 sync), so each row is finished when this returns.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth.models import User
from django.core.files import File

from accounts.issuing import api_key_create
from accounts.models import Membership, Role, Tenant
from collections_app.models import Collection, Document
from collections_app.services.collection_file import collection_export, collection_import
from collections_app.services.collections import collection_create
from collections_app.services.documents import document_create
from retrieval.models import Evaluation, Measure
from retrieval.services.golden import evaluation_start, golden_question_create
from retrieval.services.measure import measure_start
from tests.conftest import client_for
from tests.files.documents import HANDBOOK, html_bytes, pdf_bytes

PASSWORD = "a long populated-tenant password"
ANSWERED = "how are refunds paid back to my card"
UNANSWERED = "which volcano erupted in Iceland in 2010"
ONBOARDING = (
    "# IT onboarding\n\nEvery new colleague receives a laptop on the first morning.\n\n"
    "## Accounts\n\nThe service desk creates the email account and the password manager entry.\n"
)


@dataclass
class Populated:
    tenant: Tenant
    collection: Collection
    imported: Collection
    handbook: Document
    onboarding: Document
    imported_document: Document
    evaluation: Evaluation
    measure: Measure
    theirs: Collection


def populated_tenant(tmp_path: Path) -> Populated:
    tenant = Tenant.objects.create(name="acme")
    editor = User.objects.create_user("edna", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=editor, tenant=tenant, role=Role.EDITOR)
    User.objects.create_superuser("root", password=PASSWORD)

    collection = collection_create(tenant=tenant, name="handbook")
    # Committed at once (transactional tests): each ingestion runs inline.
    handbook = document_create(
        collection=collection, filename="handbook.html", content=io.BytesIO(html_bytes(HANDBOOK)), uploaded_by="edna"
    ).document
    onboarding = document_create(
        collection=collection, filename="it-onboarding.md", content=io.BytesIO(ONBOARDING.encode()),
        uploaded_by="edna",
    ).document  # fmt: skip

    path = tmp_path / "handbook.db"
    collection_export(collection=collection, path=path)
    with path.open("rb") as file:
        record = collection_import(tenant=tenant, name="handbook copy", content=File(file, name="handbook.db"))
    imported = Collection.objects.get(pk=record.collection_id)
    imported_document = Document.objects.get(collection=imported, filename="handbook.html")

    golden_question_create(collection=collection, question=ANSWERED, markers=["original card"])
    golden_question_create(collection=collection, question=UNANSWERED, control=True)
    evaluation = evaluation_start(collection=collection, requested_by="edna")
    measure = measure_start(
        collection=collection,
        variants=[{"chunk_strategy": "fixed", "chunk_size": 40, "chunk_overlap": 0}, {"chunk_strategy": "structure"}],
        requested_by="edna",
    )

    agent_key = client_for(api_key_create(tenant=tenant, role=Role.VIEWER).secret)
    for question in (ANSWERED, UNANSWERED):
        answer = agent_key.post("/api/search", {"query": question, "collections": ["handbook"]}, format="json")
        assert answer.status_code == 200, answer.content

    theirs = collection_create(tenant=Tenant.objects.create(name="globex"), name="secret")
    for row in (handbook, onboarding, imported_document):
        row.refresh_from_db()
        assert row.status == "done", (row.filename, row.error)
    evaluation.refresh_from_db()
    measure.refresh_from_db()
    return Populated(
        tenant=tenant, collection=collection, imported=imported, handbook=handbook, onboarding=onboarding,
        imported_document=imported_document, evaluation=evaluation, measure=measure, theirs=theirs,
    )  # fmt: skip


def populated_records(tenant: Tenant) -> Collection:
    """More kinds of document in a collection of their own (the findings' searches stay on the handbook): a
    spreadsheet (column roles), a PDF (OCR languages), a PDF that cannot be read (in error, with its reason), and a
    per-reader collection's labels."""
    records = collection_create(tenant=tenant, name="records", per_reader=True)
    for name, content in (
        ("prices.csv", b"product,price,region\nlamp,12.50,north\nchair,40,south\ntable,99,north\n"),
        ("report.pdf", pdf_bytes([[("Quarterly report", "Sales rose in the north and fell in the south.")]])),
        ("broken.pdf", b"%PDF-1.4\n" + b"not really a pdf at all " * 40),
    ):
        document_create(collection=records, filename=name, content=io.BytesIO(content), uploaded_by="edna")
    statuses = dict(Document.objects.filter(collection=records).values_list("filename", "status"))
    assert statuses == {"prices.csv": "done", "report.pdf": "done", "broken.pdf": "error"}, statuses
    return records


def log_in(page, base: str, name: str, password: str = PASSWORD) -> None:
    page.goto(f"{base}/admin/login/")
    page.fill("#id_username", name)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
