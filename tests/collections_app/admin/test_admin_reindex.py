"""The admin's side of stale documents and the re-index: the stale column and filter, the chunk preview's numbers
and "Apply to the collection" (the API's own service), the re-index action and page with its progress, and who may
do what (editors of the collection's tenant only; another tenant's collection is not there)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django_q import tasks as q_tasks

from accounts.models import Membership, Role
from collections_app.models import Chunk, ChunkKind, Collection, Document
from collections_app.services import reindex
from collections_app.services.collections import collection_chunking_with, collection_create
from collections_app.services.documents import collection_chunking
from collections_app.services.preview import chunk_preview_numbers, document_chunk_preview
from tests.files.documents import html_bytes
from tests.files.sections import body

ADMIN = "/admin/collections_app"


def handbook(seed: int) -> bytes:
    return html_bytes(
        [
            (1, f"Handbook {seed}", body(seed, 30)),
            (2, f"Returns {seed}", body(seed + 10, 220)),
            (3, f"Damaged goods {seed}", body(seed + 15, 90)),
            (2, f"Shipping {seed}", body(seed + 20, 120)),
        ]
    )


@pytest.fixture
def built(cast, collection, upload) -> Collection:
    collection.min_score = 0  # every question answers something
    collection.save(update_fields=["min_score"])
    for seed in range(3):
        answer = upload(cast.editor, collection, f"handbook-{seed}.html", handbook(seed))
        assert Document.objects.get(pk=answer.json()["document_id"]).status == "done"
    return collection


def _person(username: str, tenant, role: Role) -> Client:
    """A staff member with every kbsite model permission (which must not matter) and this role."""
    user = User.objects.create_user(username, password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=["collections_app", "retrieval"]))
    Membership.objects.create(user=user, tenant=tenant, role=role)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def viewer(cast) -> Client:
    return _person("vera", cast.tenant, Role.VIEWER)


def _first(collection: Collection) -> Document:
    return Document.objects.filter(collection=collection).order_by("filename")[0]


def _preview_url(document: Document) -> str:
    return f"{ADMIN}/document/{document.pk}/preview/"


def _numbers(page: str) -> list[dict[str, str]]:
    """Each side's numbers as the page shows them."""
    sides = page.split('class="module kb-preview-side"')[1:]
    return [dict(re.findall(r'data-kb-number="(\w+)">([^<]*)<', side)) for side in sides]


def _messages(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


HIERARCHICAL = {"strategy": "hierarchical", "size": 60, "unit": "tokens", "overlap": 0, "parent_size": 200}


def _searches(cast) -> list[str]:
    reply = cast.viewer.post(
        "/api/search", {"query": "when do refunds arrive", "collections": ["handbook"]}, format="json"
    )
    assert reply.status_code == 200, reply.json()
    return [r["text"] for r in reply.json()["results"]]


# --- stale: the list's column and filter, the document's page ----------------------------------------------


def test_the_document_list_marks_stale_documents_and_filters_on_them(cast, staff, built):
    first, *rest = Document.objects.filter(collection=built).order_by("filename")
    Document.objects.filter(pk=first.pk).update(stale=True)  # as a settings change leaves it (tested below)

    stale = staff.get(f"{ADMIN}/document/?stale__exact=1").content.decode()
    assert first.filename in stale and not any(d.filename in stale for d in rest)
    assert "stale — re-index" in stale
    current = staff.get(f"{ADMIN}/document/?stale__exact=0").content.decode()
    assert first.filename not in current and all(d.filename in current for d in rest)
    assert "stale — re-index" not in current

    everything = staff.get(f"{ADMIN}/document/").content.decode()
    assert everything.count("stale — re-index") == 1
    assert re.search(r'<a href="\?stale__exact=1"[^>]*>Yes</a>', everything)  # the filter is offered

    assert "stale — re-index" in staff.get(f"{ADMIN}/document/{first.pk}/change/").content.decode()
    assert "stale — re-index" not in staff.get(f"{ADMIN}/document/{rest[0].pk}/change/").content.decode()


# --- preview: both sides' numbers, apply through the service --------------------------------------------


def test_the_preview_shows_both_sides_numbers_as_the_service_counts_them(cast, staff, built):
    document = _first(built)
    page = staff.get(_preview_url(document), HIERARCHICAL).content.decode()

    collections_side, typed_side = _numbers(page)
    expected = chunk_preview_numbers(
        document=document,
        preview=document_chunk_preview(
            document=document,
            settings=collection_chunking_with(
                collection=built,
                changes={
                    "chunk_strategy": "hierarchical",
                    "chunk_size": 60,
                    "chunk_size_unit": "tokens",
                    "chunk_overlap": 0,
                    "parent_size": 200,
                },
            ),
        ),
    )
    assert typed_side == {
        "chunk_count": str(expected.chunk_count),
        "share_under_50_tokens": f"{round(expected.share_under_50_tokens * 100, 1)}%",
        "heading_only_count": str(expected.heading_only_count),
        "parent_count": str(expected.parent_count),
        "median_parent_tokens": str(expected.median_parent_tokens),
    }
    assert expected.parent_count and expected.parent_count > 1  # three sections at least: parents differ
    current = chunk_preview_numbers(
        document=document,
        preview=document_chunk_preview(document=document, settings=collection_chunking(collection=built)),
    )
    assert int(collections_side["chunk_count"]) == current.chunk_count < int(typed_side["chunk_count"])
    assert "parent_count" not in collections_side  # structure: no parents to count
    assert 'id="apply_form"' in page and 'value="Apply to the collection"' in page


def test_applying_the_typed_settings_saves_them_and_marks_every_document_stale(cast, staff, built):
    document = _first(built)
    Document.objects.filter(pk=document.pk).update(stale=True)  # one already stale: not counted again
    before = _searches(cast)

    response = staff.post(_preview_url(document), HIERARCHICAL, follow=True)

    assert response.status_code == 200
    built.refresh_from_db()
    assert (built.chunk_strategy, built.chunk_size, built.chunk_size_unit, built.chunk_overlap, built.parent_size) == (
        "hierarchical", 60, "tokens", 0, 200,
    )  # fmt: skip
    assert Document.objects.filter(collection=built, stale=True).count() == 3
    assert any("2 document(s) are now stale" in m for m in _messages(response)), _messages(response)
    page = response.content.decode()
    # The page it lands on offers the re-index, and now previews with the saved settings.
    assert f'action="{ADMIN}/collection/{built.pk}/reindex/"' in page and "Re-index the collection" in page
    assert "The collection&#x27;s settings: hierarchical, 60 tokens" in page
    # Searches still answer from what was built until the re-index.
    assert before and _searches(cast) == before


def test_applying_nothing_new_marks_nothing_stale(cast, staff, built):
    document = _first(built)
    same = {"strategy": built.chunk_strategy, "size": built.chunk_size, "unit": built.chunk_size_unit,
            "overlap": built.chunk_overlap, "parent_size": ""}  # fmt: skip
    response = staff.post(_preview_url(document), same, follow=True)
    assert any("No document became stale" in m for m in _messages(response))
    assert not Document.objects.filter(stale=True).exists()


@pytest.mark.parametrize(
    ("typed", "said", "field"),
    [
        ({"strategy": "semantic"}, "planned but not built", "strategy"),
        ({"size": 100, "overlap": 100}, "chunk_overlap must be smaller than chunk_size", "overlap"),
        ({"size": 300, "parent_size": 200}, "parent_size must be larger than chunk_size", "parent_size"),
        ({"size": 5}, "greater than or equal to 20", "size"),
    ],
)
def test_a_refused_apply_says_why_beside_the_field_and_saves_nothing(cast, staff, built, typed, said, field):
    document = _first(built)
    before = Collection.objects.filter(pk=built.pk).values().get()
    data = {"strategy": "structure", "size": 300, "unit": "chars", "overlap": 0, "parent_size": "", **typed}

    response = staff.post(_preview_url(document), data)

    assert response.status_code == 200
    page = response.content.decode()
    assert said in page
    assert re.search(rf'field-{field}"><ul class="errorlist"', page), page[:2000]
    assert Collection.objects.filter(pk=built.pk).values().get() == before
    assert not Document.objects.filter(stale=True).exists()


def test_the_collection_page_previews_one_of_its_documents_chosen_from_a_list(cast, staff, built, upload):
    documents = list(Document.objects.filter(collection=built).order_by("filename"))
    change = staff.get(f"{ADMIN}/collection/{built.pk}/change/").content.decode()
    assert f'href="{ADMIN}/collection/{built.pk}/preview/">Preview chunking</a>' in change

    page = staff.get(f"{ADMIN}/collection/{built.pk}/preview/").content.decode()
    options = re.findall(
        r'<option value="([^"]+)"( selected)?>', page.split('id="id_document"')[1].split("</select>")[0]
    )
    assert [pk for pk, _ in options] == [str(d.pk) for d in documents]
    assert options[0][1] == " selected"  # the first by default
    assert f"<strong>{documents[0].filename}</strong>" in page

    second = staff.get(f"{ADMIN}/collection/{built.pk}/preview/", {"document": documents[1].pk, **HIERARCHICAL})
    assert f"<strong>{documents[1].filename}</strong>" in second.content.decode()
    assert len(_numbers(second.content.decode())) == 2

    # Applied from here, it lands back on the same document's preview.
    applied = staff.post(f"{ADMIN}/collection/{built.pk}/preview/?document={documents[1].pk}", HIERARCHICAL)
    assert applied.status_code == 302 and applied["Location"].endswith(f"/preview/?document={documents[1].pk}")
    assert Document.objects.filter(collection=built, stale=True).count() == 3

    theirs = collection_create(tenant=cast.outsider_tenant, name="theirs")
    foreign = Document.objects.get(pk=upload(cast.outsider, theirs, "theirs.html", handbook(9)).json()["document_id"])
    fallback = staff.get(f"{ADMIN}/collection/{built.pk}/preview/", {"document": foreign.pk}).content.decode()
    assert "theirs.html" not in fallback and f"<strong>{documents[0].filename}</strong>" in fallback


def test_a_collection_with_nothing_read_says_so_on_its_preview(cast, staff, collection):
    page = staff.get(f"{ADMIN}/collection/{collection.pk}/preview/")
    assert page.status_code == 200
    assert "No document of <strong>handbook</strong> is read yet" in page.content.decode()


# --- the re-index: page, action, progress, resume -------------------------------------------------------


def test_a_reindex_from_the_collection_page_rebuilds_with_the_new_settings_and_clears_stale(
    cast, staff, built, django_capture_on_commit_callbacks
):
    document = _first(built)
    staff.post(_preview_url(document), HIERARCHICAL)
    assert Document.objects.filter(stale=True).count() == 3
    listed = staff.get(f"{ADMIN}/collection/").content.decode()
    assert "3 stale — re-index" in listed

    change = staff.get(f"{ADMIN}/collection/{built.pk}/change/").content.decode()
    assert f'href="{ADMIN}/collection/{built.pk}/reindex/">Re-index</a>' in change
    confirm = staff.get(f"{ADMIN}/collection/{built.pk}/reindex/").content.decode()
    assert "Yes, re-index" in confirm and "3 read documents" in confirm

    with django_capture_on_commit_callbacks(execute=True):
        started = staff.post(f"{ADMIN}/collection/{built.pk}/reindex/")
    assert started.status_code == 302 and started["Location"].endswith(f"/collection/{built.pk}/change/")

    built.refresh_from_db()
    assert built.reindex_generation is None and built.active_generation == 1
    assert not Document.objects.filter(stale=True).exists()
    # Rebuilt with what was applied: hierarchical parents, children of at most 60 model tokens.
    assert Chunk.objects.filter(collection=built, kind=ChunkKind.PARENT).exists()
    page = staff.get(f"{ADMIN}/collection/{built.pk}/change/").content.decode()
    assert "up to date" in page and "3 / 3 documents" in page and "stale — re-index" not in page
    assert "stale — re-index" not in staff.get(f"{ADMIN}/document/").content.decode()
    assert _searches(cast)  # a search still answers, now from the new build


def test_a_stopped_reindex_shows_its_progress_and_error_and_resumes_when_asked_again(
    cast, staff, built, monkeypatch, django_capture_on_commit_callbacks
):
    staff.post(_preview_url(_first(built)), HIERARCHICAL)
    stage = reindex.document_stage
    staged: list[str] = []

    def stage_then_fail(*, document, generation):
        if len(staged) == 1:
            raise RuntimeError("worker killed")
        staged.append(str(document.pk))
        return stage(document=document, generation=generation)

    monkeypatch.setattr(reindex, "document_stage", stage_then_fail)
    with django_capture_on_commit_callbacks(execute=True):
        staff.post(f"{ADMIN}/collection/{built.pk}/reindex/")

    page = staff.get(f"{ADMIN}/collection/{built.pk}/change/").content.decode()
    assert "stopped" in page and "1 / 3 documents" in page and "worker killed" in page
    assert "re-index again to resume" in page
    status = staff.get(f"{ADMIN}/collection/{built.pk}/reindex/status/").json()
    assert status["pending"] is True and "1 / 3 documents" in status["html"]
    assert "worker killed" in staff.get(f"{ADMIN}/collection/").content.decode()  # the list's column too
    assert Document.objects.filter(stale=True).count() == 3

    resumed: list[str] = []

    def stage_and_note(*, document, generation):
        resumed.append(str(document.pk))
        return stage(document=document, generation=generation)

    monkeypatch.setattr(reindex, "document_stage", stage_and_note)
    with django_capture_on_commit_callbacks(execute=True):
        staff.post(f"{ADMIN}/collection/{built.pk}/reindex/")
    assert len(resumed) == 2 and not set(resumed) & set(staged)  # resumed where it stopped
    page = staff.get(f"{ADMIN}/collection/{built.pk}/change/").content.decode()
    assert "up to date" in page and "3 / 3 documents" in page
    assert staff.get(f"{ADMIN}/collection/{built.pk}/reindex/status/").json()["pending"] is False


def test_a_pending_reindex_says_searches_answer_from_the_previous_build(
    cast, staff, built, monkeypatch, django_capture_on_commit_callbacks
):
    held: list[tuple] = []
    monkeypatch.setattr(q_tasks, "async_task", lambda *args, **kwargs: held.append(args))  # queued, not run
    staff.post(_preview_url(_first(built)), HIERARCHICAL)
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post(f"{ADMIN}/collection/{built.pk}/reindex/", follow=True)

    assert held and held[0][0] == "collections_app.tasks.reindex_collection"
    page = response.content.decode()
    assert "0 / 3 documents" in page and "searches answer from the previous build until the cutover" in page
    assert 'data-kb-pending="1"' in page and "reindex_status.js" in page
    assert any("Re-index of handbook started" in m for m in _messages(response))


def test_the_list_action_reindexes_the_selected_collections(cast, staff, built, django_capture_on_commit_callbacks):
    staff.post(_preview_url(_first(built)), {**HIERARCHICAL, "size": 80})
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post(
            f"{ADMIN}/collection/", {"action": "reindex", "_selected_action": [str(built.pk)]}, follow=True
        )
    assert any("Re-index of handbook started" in m for m in _messages(response))
    assert not Document.objects.filter(stale=True).exists()
    assert Collection.objects.get(pk=built.pk).active_generation == 1


# --- who may -------------------------------------------------------------------------------------------


def test_a_viewer_reads_the_preview_but_cannot_apply_or_reindex(
    cast, viewer, built, django_capture_on_commit_callbacks
):
    document = _first(built)
    page = viewer.get(_preview_url(document), HIERARCHICAL)
    assert page.status_code == 200 and len(_numbers(page.content.decode())) == 2
    assert 'id="apply_form"' not in page.content.decode()

    assert viewer.post(_preview_url(document), HIERARCHICAL).status_code == 403
    assert viewer.post(f"{ADMIN}/collection/{built.pk}/preview/", HIERARCHICAL).status_code == 403
    assert viewer.get(f"{ADMIN}/collection/{built.pk}/reindex/").status_code == 403
    with django_capture_on_commit_callbacks(execute=True):
        assert viewer.post(f"{ADMIN}/collection/{built.pk}/reindex/").status_code == 403
        viewer.post(f"{ADMIN}/collection/", {"action": "reindex", "_selected_action": [str(built.pk)]})
    change = viewer.get(f"{ADMIN}/collection/{built.pk}/change/").content.decode()
    assert ">Re-index</a>" not in change and ">Preview chunking</a>" in change
    assert 'value="reindex"' not in viewer.get(f"{ADMIN}/collection/").content.decode()  # no such action offered

    built.refresh_from_db()
    assert (built.chunk_strategy, built.active_generation, built.reindex_generation) == ("structure", 0, None)


def test_another_tenants_collection_cannot_be_previewed_applied_or_reindexed(
    cast, staff, upload, django_capture_on_commit_callbacks
):
    theirs = collection_create(tenant=cast.outsider_tenant, name="theirs")
    document = Document.objects.get(pk=upload(cast.outsider, theirs, "theirs.html", handbook(5)).json()["document_id"])

    for url in (
        f"{ADMIN}/collection/{theirs.pk}/reindex/",
        f"{ADMIN}/collection/{theirs.pk}/reindex/status/",
        f"{ADMIN}/collection/{theirs.pk}/preview/",
        _preview_url(document),
    ):
        assert staff.get(url).status_code == 404, url
    with django_capture_on_commit_callbacks(execute=True):
        assert staff.post(f"{ADMIN}/collection/{theirs.pk}/reindex/").status_code == 404
        assert staff.post(_preview_url(document), HIERARCHICAL).status_code == 404
        staff.post(f"{ADMIN}/collection/", {"action": "reindex", "_selected_action": [str(theirs.pk)]})

    theirs.refresh_from_db()
    assert (theirs.chunk_strategy, theirs.active_generation, theirs.reindex_generation) == ("structure", 0, None)
    assert not Document.objects.filter(stale=True).exists()
