"""OCR by language: scanned pages generated here, read by the real Tesseract, measured by character error rate."""

from __future__ import annotations

import io
import json
import random

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from fpdf import FPDF
from PIL import Image, ImageDraw, ImageFont
from rapidfuzz.distance import Levenshtein

from collections_app.models import Chunk, Document
from collections_app.services.collections import collection_create
from collections_app.services.ingest_options import InvalidIngestOptions
from ingestion import ocr

_NEEDED = {"eng", "mkd", "srp", "srp_latn", "heb"}
needs_tesseract = pytest.mark.skipif(
    not (ocr.installed_languages() or set()) >= _NEEDED,
    reason=f"Tesseract with {' '.join(sorted(_NEEDED))} is not installed: {ocr.TESSERACT_APT_LINE}",
)

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"
MACEDONIAN = [
    "Скопје е главен и најголем град во Северна Македонија. Градот лежи на реката Вардар, "
    "во средишниот дел на Скопската Котлина.",
    "Охридското Езеро е едно од најстарите езера во Европа. Неговата вода е чиста и бистра, "
    "а на брегот се наоѓаат многу цркви и манастири.",
    "Македонскиот јазик се пишува со кирилица. Посебни букви има во зборовите ѓердан, ќерка, ѕвезда, "
    "љубов, њива и џеб.",
    "Секое лето во Охрид се одржува фестивал на музика и театар, а илјадници посетители доаѓаат од цела земја.",
]
SHORT_MACEDONIAN = ["Охридското Езеро е едно од најстарите езера во Европа."]


def scanned_page(paragraphs: list[str], width: int = 2480, seed: int = 3) -> Image.Image:
    """A page as a 300 dpi scanner gives it: about 10 pt serif text, black on white, a sprinkle of specks."""
    font = ImageFont.truetype(FONT, 42)
    measure = ImageDraw.Draw(Image.new("L", (1, 1)))
    margin, line_height = 150, 62
    lines: list[str] = []
    for paragraph in paragraphs:
        line = ""
        for word in paragraph.split():
            wider = f"{line} {word}".strip()
            if line and measure.textlength(wider, font=font) > width - 2 * margin:
                lines.append(line)
                line = word
            else:
                line = wider
        lines += [line, ""]  # a blank line between paragraphs
    image = Image.new("L", (width, 2 * margin + line_height * len(lines)), 255)
    draw = ImageDraw.Draw(image)
    for number, line in enumerate(lines):
        draw.text((margin, margin + number * line_height), line, font=font, fill=0)
    rng, pixels = random.Random(seed), image.load()
    assert pixels is not None
    for _ in range(image.width * image.height // 400):
        pixels[rng.randrange(image.width), rng.randrange(image.height)] = rng.choice((0, 255))
    return image


def image_bytes(image: Image.Image, format: str = "PNG", **params) -> bytes:
    out = io.BytesIO()
    image.save(out, format=format, dpi=(300, 300), **params)
    return out.getvalue()


def cer(read: str, reference: str) -> float:
    """Character error rate: edit distance over the reference's length, whitespace runs counted as one space."""
    read, reference = " ".join(read.split()), " ".join(reference.split())
    return Levenshtein.distance(read, reference) / len(reference)


def text_read(document: Document, page: int | None = None) -> str:
    return " ".join(b["text"] for b in document.blocks or [] if page is None or b["page"] == page)


def upload_options(options: dict) -> dict:
    return {"ingest_options": json.dumps(options)}


def document_of(response) -> Document:
    assert response.status_code == 202, response.content
    return Document.objects.get(pk=response.json()["document_id"])


@pytest.fixture(scope="module")
def macedonian_png() -> bytes:
    return image_bytes(scanned_page(MACEDONIAN))


@needs_tesseract
def test_a_macedonian_scan_read_with_mkd_is_accurate_and_visibly_worse_with_the_default_languages(
    cast, collection, upload, macedonian_png
):
    mkd = document_of(
        upload(cast.editor, collection, "skopje.png", macedonian_png, **upload_options({"tesseract_langs": ["mkd"]}))
    )
    other = collection_create(tenant=cast.tenant, name="default languages")
    default = document_of(upload(cast.editor, other, "skopje.png", macedonian_png))

    assert mkd.status == "done" and default.status == "done", (mkd.error, default.error)
    reference = " ".join(MACEDONIAN)
    mkd_cer, default_cer = cer(text_read(mkd), reference), cer(text_read(default), reference)
    print(f"CER with mkd: {mkd_cer:.2%}; with the default languages: {default_cer:.2%}")
    assert mkd_cer < 0.05
    assert default_cer > max(0.20, 3 * mkd_cer)
    assert {b["page"] for b in (mkd.blocks or [])} == {1}
    assert len(mkd.blocks or []) == len(MACEDONIAN)  # one block per paragraph
    assert Chunk.objects.filter(document=mkd, text__contains="Охридското Езеро").exists()
    assert mkd.ingest_options == {"tesseract_langs": ["mkd"]} and mkd.warnings == []


@needs_tesseract
def test_a_scanned_pdf_page_is_read_by_ocr_and_keeps_its_page_number(cast, collection, upload):
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.multi_cell(0, 8, "Returns are accepted within thirty days when the goods are unused.")
    pdf.add_page()  # a scan: an image and no text layer
    pdf.image(scanned_page(MACEDONIAN[:2]), x=10, y=10, w=190)

    document = document_of(
        upload(
            cast.editor,
            collection,
            "mixed.pdf",
            bytes(pdf.output()),
            **upload_options({"tesseract_langs": ["mkd", "eng"]}),
        )
    )

    assert document.status == "done", document.error
    assert "thirty days" in text_read(document, page=1)
    assert cer(text_read(document, page=2), " ".join(MACEDONIAN[:2])) < 0.05
    assert all(b["page"] in (1, 2) for b in (document.blocks or []))
    assert Chunk.objects.get(document=document, text__contains="thirty days").page == 1
    assert Chunk.objects.get(document=document, text__contains="Скопје").page == 2


@needs_tesseract
def test_mineru_lang_is_stored_and_the_warning_names_the_tesseract_languages_used_instead(cast, collection, upload):
    png = image_bytes(scanned_page(SHORT_MACEDONIAN, width=1800))
    document = document_of(
        upload(cast.editor, collection, "lake.png", png, **upload_options({"mineru_lang": "cyrillic"}))
    )

    assert document.status == "done", document.error
    assert document.ingest_options == {"mineru_lang": "cyrillic"}
    [warning] = document.warnings
    assert "primary OCR (MinerU, cyrillic) was not available" in warning
    assert "Tesseract (mkd+srp+eng)" in warning  # the Cyrillic packs installed here, plus English
    assert str(settings.MEDIA_ROOT) not in warning
    assert cer(text_read(document), SHORT_MACEDONIAN[0]) < 0.05


def test_an_unknown_mineru_lang_is_refused_on_upload(cast, collection, upload):
    response = upload(
        cast.editor, collection, "a.png", b"\x89PNG\r\n\x1a\n", **upload_options({"mineru_lang": "klingon"})
    )

    assert response.status_code == 400
    assert "cyrillic" in response.json()["ingest_options"][0]
    assert not Document.objects.exists()


def test_an_unknown_tesseract_language_is_refused_on_upload(cast, collection, upload):
    response = upload(
        cast.editor, collection, "a.png", b"\x89PNG\r\n\x1a\n", **upload_options({"tesseract_langs": ["mk"]})
    )

    assert response.status_code == 400
    assert "unknown Tesseract language code(s): mk" in response.json()["ingest_options"][0]


def test_language_data_not_installed_is_refused_naming_its_apt_package(cast, collection, upload, monkeypatch):
    monkeypatch.setattr(ocr, "installed_languages", lambda: {"eng"})
    response = upload(
        cast.editor, collection, "a.png", b"\x89PNG\r\n\x1a\n", **upload_options({"tesseract_langs": ["srp_latn"]})
    )

    assert response.status_code == 400
    assert "apt-get install -y tesseract-ocr-srp-latn" in response.json()["ingest_options"][0]


@needs_tesseract
def test_changing_the_ocr_languages_needs_confirmation_then_re_parses_with_them(
    cast, collection, upload, django_capture_on_commit_callbacks
):
    png = image_bytes(scanned_page(SHORT_MACEDONIAN, width=1800))
    document = document_of(upload(cast.editor, collection, "lake.png", png))
    before = list(Chunk.objects.filter(document=document).values_list("text", flat=True))
    url = f"/api/manage/collections/{collection.pk}/documents/{document.pk}/ingest-options"

    unconfirmed = cast.editor.patch(url, {"tesseract_langs": ["mkd"]}, format="json")
    assert unconfirmed.status_code == 409
    assert "manual chunk edits and per-block decisions" in unconfirmed.json()["detail"]
    document.refresh_from_db()
    assert document.ingest_options == {} and document.blocks is not None

    unknown = cast.editor.patch(url, {"tesseract_langs": ["xx"], "confirm_reparse": True}, format="json")
    assert unknown.status_code == 400

    with django_capture_on_commit_callbacks(execute=True):
        confirmed = cast.editor.patch(url, {"tesseract_langs": ["mkd"], "confirm_reparse": True}, format="json")
    assert confirmed.status_code == 202
    document.refresh_from_db()
    assert document.status == "done" and document.ingest_options == {"tesseract_langs": ["mkd"]}
    after = list(Chunk.objects.filter(document=document).values_list("text", flat=True))
    assert after != before
    assert cer(" ".join(after), SHORT_MACEDONIAN[0]) < 0.05 < cer(" ".join(before), SHORT_MACEDONIAN[0])


def test_the_outsider_cannot_change_a_documents_ocr_languages(cast, collection, upload):
    document = document_of(upload(cast.editor, collection, "a.txt", b"Refunds take five days."))
    url = f"/api/manage/collections/{collection.pk}/documents/{document.pk}/ingest-options"

    response = cast.outsider.patch(url, {"tesseract_langs": ["mkd"], "confirm_reparse": True}, format="json")
    assert response.status_code == 404


def test_without_tesseract_an_image_ends_in_error_naming_the_apt_line(cast, collection, upload, monkeypatch):
    monkeypatch.setattr(ocr, "TESSERACT_CMD", "kbsite-no-such-tesseract")
    png = image_bytes(Image.new("L", (200, 100), 255))
    document = document_of(upload(cast.editor, collection, "scan.png", png))

    assert document.status == "error"
    assert ocr.TESSERACT_APT_LINE in document.error
    assert str(settings.MEDIA_ROOT) not in document.error


def test_without_tesseract_a_pdf_keeps_its_text_pages_and_names_the_skipped_scans(
    cast, collection, upload, monkeypatch
):
    monkeypatch.setattr(ocr, "TESSERACT_CMD", "kbsite-no-such-tesseract")
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.multi_cell(0, 8, "Returns are accepted within thirty days when the goods are unused.")
    pdf.add_page()
    pdf.image(scanned_page(SHORT_MACEDONIAN, width=1800), x=10, y=10, w=190)
    scans_only = FPDF()
    scans_only.add_page()
    scans_only.image(scanned_page(SHORT_MACEDONIAN, width=1800), x=10, y=10, w=190)

    mixed = document_of(upload(cast.editor, collection, "mixed.pdf", bytes(pdf.output())))
    scanned = document_of(upload(cast.editor, collection, "scan.pdf", bytes(scans_only.output())))

    assert mixed.status == "done" and {b["page"] for b in (mixed.blocks or [])} == {1}
    [warning] = mixed.warnings
    assert warning.startswith("page(s) 2 are scans and were not read") and ocr.TESSERACT_APT_LINE in warning
    assert scanned.status == "error" and ocr.TESSERACT_APT_LINE in scanned.error


def test_an_empty_image_ends_in_error_saying_no_text_could_be_read(cast, collection, upload):
    document = document_of(upload(cast.editor, collection, "empty.png", b""))

    assert document.status == "error" and "no text could be read" in document.error


@needs_tesseract
def test_a_multi_frame_tiff_gives_one_page_per_frame(tmp_path):
    frames = [scanned_page([f"Page {n} of the delivery note."], width=1400, seed=n) for n in (1, 2)]
    path = tmp_path / "note.tiff"
    path.write_bytes(image_bytes(frames[0], "TIFF", save_all=True, append_images=frames[1:]))

    result = ocr.parse_image(path, ".tiff", {"tesseract_langs": ["eng"]})

    assert [(b.page, b.text) for b in result.blocks] == [
        (1, "Page 1 of the delivery note."),
        (2, "Page 2 of the delivery note."),
    ]


def test_default_languages_are_english_and_installed_latin_script_packs():
    assert ocr.default_languages({"eng", "mkd", "srp_latn", "heb"}) == ["eng", "srp_latn"]
    assert ocr.default_languages({"eng", "script/Latin", "deu"}) == ["eng", "script/Latin"]


def test_ocr_options_are_validated_by_their_owner(monkeypatch):
    monkeypatch.setattr(ocr, "installed_languages", lambda: None)  # without Tesseract, known codes are kept
    assert ocr.validate_options({"tesseract_langs": "mkd+eng", "mineru_lang": "el"}) == {
        "tesseract_langs": ["mkd", "eng"],
        "mineru_lang": "el",
    }
    with pytest.raises(InvalidIngestOptions, match="unknown Tesseract language"):
        ocr.validate_options({"tesseract_langs": ["osd"]})  # orientation detection reads no text
    with pytest.raises(InvalidIngestOptions, match="list of Tesseract language codes"):
        ocr.validate_options({"tesseract_langs": [1]})
    assert ocr.apt_package("script/Latin") == "tesseract-ocr-script-latn"


def test_tesseract_paragraphs_are_joined_from_its_lines():
    header = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"
    words = [(1, 1, 1, "Непо-"), (1, 1, 2, "знат"), (1, 1, 2, "збор."), (2, 1, 1, "Друг")]
    rows = [f"5\t1\t{block}\t{par}\t{line}\t1\t0\t0\t1\t1\t90\t{word}" for block, par, line, word in words]

    assert ocr.paragraphs_from_tsv("\n".join([header, *rows])) == ["Непознат збор.", "Друг"]


# --- admin ---------------------------------------------------------------------------------------------------------


def admin_upload(staff, collection, filename: str, content: bytes, **fields):
    file = SimpleUploadedFile(filename, content)
    return staff.post("/admin/collections_app/document/add/", {"collection": collection.pk, "upload": file, **fields})


def test_the_admin_upload_passes_the_language_of_scanned_text(
    cast, staff, collection, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_upload(staff, collection, "notes.txt", b"Refunds take five days.", scanned_text_language="mkd")

    assert response.status_code == 302
    assert Document.objects.get().ingest_options == {"tesseract_langs": ["mkd", "eng"]}


def test_the_admin_upload_refuses_a_language_whose_data_is_missing(cast, staff, collection, monkeypatch):
    monkeypatch.setattr(ocr, "installed_languages", lambda: {"eng"})
    response = admin_upload(staff, collection, "notes.txt", b"Refunds.", scanned_text_language="heb")

    assert response.status_code == 200
    assert "tesseract-ocr-heb" in response.content.decode()
    assert not Document.objects.exists()


@needs_tesseract
def test_the_admin_ocr_page_re_parses_with_new_languages_only_once_confirmed(
    cast, staff, collection, django_capture_on_commit_callbacks
):
    png = image_bytes(scanned_page(SHORT_MACEDONIAN, width=1800))
    with django_capture_on_commit_callbacks(execute=True):
        admin_upload(staff, collection, "lake.png", png)
    document = Document.objects.get()
    ocr_url = f"/admin/collections_app/document/{document.pk}/ocr/"
    assert ocr_url in staff.get(f"/admin/collections_app/document/{document.pk}/change/").content.decode()
    page = staff.get(ocr_url).content.decode()
    assert "Language of scanned text" in page and "manual chunk edits" in page

    unconfirmed = staff.post(ocr_url, {"scanned_text_language": "mkd"})
    assert unconfirmed.status_code == 200 and "per-block decisions" in unconfirmed.content.decode()
    document.refresh_from_db()
    assert document.ingest_options == {}

    with django_capture_on_commit_callbacks(execute=True):
        confirmed = staff.post(ocr_url, {"scanned_text_language": "mkd", "confirm_reparse": "on"})
    assert confirmed.status_code == 302
    document.refresh_from_db()
    assert document.status == "done" and document.ingest_options == {"tesseract_langs": ["mkd", "eng"]}
    assert (
        cer(" ".join(Chunk.objects.filter(document=document).values_list("text", flat=True)), SHORT_MACEDONIAN[0])
        < 0.05
    )


def test_it_hides_another_tenants_document_ocr_page(cast, staff, upload):
    theirs = collection_create(tenant=cast.outsider_tenant, name="theirs")
    response = upload(cast.outsider, theirs, "t.txt", b"Their refunds.")

    assert staff.get(f"/admin/collections_app/document/{response.json()['document_id']}/ocr/").status_code == 404
