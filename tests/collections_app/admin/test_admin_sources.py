"""Admin side of email attachments, zip uploads and folder sources."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile

from accounts.models import Role
from collections_app.models import Build, Document
from collections_app.services.folder_sources import folder_source_set
from tests.files.archives import HANDBOOK_ZIP, zip_bytes
from tests.files.email import eml_bytes


def test_a_zip_uploaded_in_the_admin_imports_each_member(staff, collection, django_capture_on_commit_callbacks):
    content = zip_bytes({**HANDBOOK_ZIP, "setup.exe": b"MZ\x90\x00"})
    file = SimpleUploadedFile("handbook.zip", content, content_type="application/zip")
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post("/admin/collections_app/document/add/", {"collection": collection.pk, "upload": file})

    assert response.status_code == 302
    assert response.url.endswith(f"?collection__id__exact={collection.pk}")
    assert Document.objects.filter(collection=collection, status="done").count() == 3
    assert Build.objects.get(collection=collection, document=None).built_from == "upload by ada"
    page = staff.get(response.url)
    shown = " ".join(str(m) for m in page.context["messages"])
    assert "3 document(s) imported" in shown and "setup.exe not imported" in shown


def test_a_zip_with_an_ocr_language_is_refused_in_the_form(staff, collection):
    file = SimpleUploadedFile("handbook.zip", zip_bytes(HANDBOOK_ZIP))
    response = staff.post(
        "/admin/collections_app/document/add/",
        {"collection": collection.pk, "upload": file, "scanned_text_language": "mkd"},
    )

    assert response.status_code == 200
    assert "takes no OCR language" in response.content.decode()
    assert not Document.objects.exists()


def test_a_message_and_its_attachment_link_to_each_other(cast, staff, collection, upload):
    content = eml_bytes(attachments=[("notes.txt", b"Parcels are weighed at the front desk.\n", "text/plain")])
    message = Document.objects.get(pk=upload(cast.editor, collection, "m.eml", content).json()["document_id"])
    attachment = Document.objects.get(parent=message)

    message_page = staff.get(f"/admin/collections_app/document/{message.pk}/change/").content.decode()
    attachment_page = staff.get(f"/admin/collections_app/document/{attachment.pk}/change/").content.decode()

    assert f"/admin/collections_app/document/{attachment.pk}/change/" in message_page
    assert "notes.txt</a> (done)" in message_page
    assert f"/admin/collections_app/document/{message.pk}/change/" in attachment_page


def test_the_collection_page_says_whether_it_has_a_folder_source_never_where(staff, collection, tmp_path, settings):
    url = f"/admin/collections_app/collection/{collection.pk}/change/"
    page = staff.get(url).content.decode()
    assert "none (an admin of this tenant can choose a folder under KB_FOLDER_SOURCES_ROOT/acme/)" in page

    settings.KB_FOLDER_SOURCES_ROOT = str(tmp_path)
    (tmp_path / "acme" / "handbook-source").mkdir(parents=True)
    folder_source_set(collection=collection, folder="handbook-source", role=Role.ADMIN)
    page = staff.get(url).content.decode()

    assert "set by an admin of this tenant" in page
    assert str(tmp_path) not in page and "handbook-source" not in page  # an editor: not even the relative folder
    assert 'name="folder_source"' not in page


def test_the_sync_action_queues_a_folder_sync(staff, collection, tmp_path, settings):
    folder = tmp_path / "handbook-source"
    folder.mkdir()
    (folder / "delivery.txt").write_text("Parcels leave the warehouse every weekday morning.\n")
    settings.KB_COLLECTION_FOLDERS = {"HANDBOOK": str(folder)}

    response = staff.post(
        "/admin/collections_app/collection/",
        {"action": "sync_folder_source", "_selected_action": [collection.pk]},
        follow=True,
    )

    assert "Folder sync queued for handbook" in response.content.decode()
    # Tests run the queue inline: the sync has happened.
    assert Document.objects.get(collection=collection).source_uri == "folder://handbook/delivery.txt"
    assert Build.objects.get(collection=collection, document=None).built_from == "folder source handbook"
