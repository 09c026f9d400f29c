"""Issue 41, findings 7-10, in Chromium against a populated tenant (tests/browser/populated.py): imported documents
(no original), the chunk preview's overlap and unit, plain words for the judge and for an evaluation's empty
settings with only the matched spans marked, and the layout of the document page, its messages and its
confirmation pages. Each test saves screenshots under var/test-artifacts/issue41-*.png and checks the fixed state.
"""

from __future__ import annotations

import pytest

from collections_app.models import Chunk, Document
from ingestion.chunking import overlap_following
from tests.browser.populated import ANSWERED, ONBOARDING, log_in, populated_tenant

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ADMIN = "/admin/collections_app"


@pytest.fixture
def tenant(tmp_path):
    return populated_tenant(tmp_path)


def _box(page, selector: str) -> dict[str, float]:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, f"{selector} is not on the page"
    return box


def _intersect(a: dict[str, float], b: dict[str, float]) -> bool:
    return not (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


def test_an_imported_document_offers_nothing_that_needs_its_missing_original(
    offline_page, live_server, tenant, screenshot
):
    page, base = offline_page, live_server.url
    imported = tenant.imported_document
    log_in(page, base, "edna")

    # Its page: no "Download original", no "0 bytes", and Re-ingest still offered (it can run).
    page.goto(f"{base}{ADMIN}/document/{imported.pk}/change/")
    tools = page.inner_text(".object-tools")
    assert "DOWNLOAD ORIGINAL" not in tools.upper() and "RE-INGEST" in tools.upper()
    size = page.inner_text(".field-size_shown .readonly")
    assert "no original (imported)" in size and "bytes" not in size
    screenshot(page, "issue41-imported-document")

    # The list says the same in its size column.
    page.goto(f"{base}{ADMIN}/document/?collection__id__exact={tenant.imported.pk}")
    row = page.locator("#result_list tbody tr").first.inner_text()
    assert "no original (imported)" in row and "0 bytes" not in row

    # An old link to its download: the admin's own page, saying why, not a bare 404.
    page.goto(f"{base}{ADMIN}/document/{imported.pk}/download/")
    page.wait_for_selector("#site-name")
    warning = page.inner_text(".messagelist .warning")
    assert "handbook.html has no original to download" in warning and "collection file" in warning
    assert page.url.endswith(f"/document/{imported.pk}/change/")
    screenshot(page, "issue41-imported-download")

    # Re-ingest says what it reads, and it runs: the paragraphs come back from those it was imported with.
    before = Chunk.objects.filter(document=imported).count()
    page.goto(f"{base}{ADMIN}/document/{imported.pk}/reingest/")
    reads = page.inner_text("#kb-reingest-reads")
    assert "the paragraphs it was imported with" in reads and "from its original" not in reads
    screenshot(page, "issue41-imported-reingest")
    page.click("input[type=submit][value='Yes, re-ingest']")
    page.wait_for_selector(".messagelist")
    imported.refresh_from_db()
    assert (imported.status, imported.error) == ("done", "")
    assert Chunk.objects.filter(document=imported).count() == before

    # A document uploaded as a file keeps its download and its size.
    page.goto(f"{base}{ADMIN}/document/{tenant.handbook.pk}/change/")
    assert "DOWNLOAD ORIGINAL" in page.inner_text(".object-tools").upper()
    assert "bytes" in page.inner_text(".field-size_shown .readonly")


def test_the_chunk_preview_takes_an_empty_overlap_and_names_its_unit(offline_page, live_server, tenant, screenshot):
    page, base = offline_page, live_server.url
    log_in(page, base, "edna")
    page.goto(f"{base}{ADMIN}/document/{tenant.handbook.pk}/preview/")

    unit = page.inner_text("#kb-preview-unit")
    assert "characters" in unit and "Sizes are counted in the embedding model's tokens" not in page.content()
    assert page.eval_on_selector("#id_overlap", "e => e.required") is False
    page.fill("#id_size", "200")
    page.fill("#id_overlap", "")
    page.click("#preview_form input[type=submit]")
    page.wait_for_selector(".kb-preview-side >> nth=1")
    # No browser bubble held the form back: the second side was cut, with the overlap that follows the size.
    yours = page.locator(".kb-preview-side h2").nth(1).inner_text()
    assert f"200 characters, overlap {overlap_following(200)}" in yours, yours
    assert "characters, " in page.locator(".kb-preview-side .kb-paragraph-where").first.inner_text()
    screenshot(page, "issue41-preview-empty-overlap")


def test_the_judge_and_empty_settings_are_words_and_only_matched_spans_are_marked(
    offline_page, live_server, tenant, screenshot
):
    page, base = offline_page, live_server.url
    log_in(page, base, "edna")

    page.goto(f"{base}/admin/retrieval/evaluation/{tenant.evaluation.pk}/change/")
    searched = page.inner_text("#evaluation-settings")
    assert "None" not in searched and "null" not in searched
    assert "no reader chosen" in searched and "characters" in searched
    screenshot(page, "issue41-evaluation-settings")

    page.goto(f"{base}/admin/retrieval/searchevent/try/{tenant.collection.pk}/")
    page.fill("#id_q", ANSWERED)
    page.click("#try_search_form input[type=submit]")
    page.wait_for_selector("#search-trace")
    heading = page.inner_text("#search-results h2")
    assert page.inner_text(".kb-judged") == "no judge configured"
    assert "null" not in heading and "None" not in heading
    # The window is stitched from four paragraphs, three of them over the floor: only the one the result cites
    # (its best match, the search's `matches`) is highlighted, the others underlined, the rest left plain.
    first = page.locator("#search-results .kb-result").first
    text = first.locator("p").first.inner_text()
    highlighted = first.locator("mark.kb-match")
    assert highlighted.count() == 1 and "original card" in highlighted.inner_text()
    assert len(highlighted.inner_text()) < len(text) / 2, "most of the window is highlighted"
    assert highlighted.evaluate("e => getComputedStyle(e).backgroundColor") != "rgba(0, 0, 0, 0)"
    others = first.locator("mark.kb-match-also")
    assert others.count() >= 1
    assert others.first.evaluate("e => getComputedStyle(e).backgroundColor") == "rgba(0, 0, 0, 0)"
    assert "This handbook explains" not in highlighted.inner_text() + "".join(others.all_inner_texts())
    assert "highlighted" in first.locator(".kb-matched").inner_text()
    screenshot(page, "issue41-try-search-words")

    # The audit of that search: plain words too.
    page.goto(f"{base}/admin/retrieval/searchevent/")
    assert page.locator("#result_list .kb-refused").first.inner_text() == "no judge"


def _upload_version(page, base: str) -> None:
    page.goto(f"{base}{ADMIN}/document/add/")
    page.select_option("#id_collection", label="handbook")
    changed = ONBOARDING + "\n## Phones\n\nA phone is handed out on request.\n"
    page.set_input_files(
        "#id_upload", files=[{"name": "it-onboarding.md", "mimeType": "text/markdown", "buffer": changed.encode()}]
    )
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist")


@pytest.mark.parametrize("width", [1280, 900])
def test_tool_buttons_wrap_messages_keep_names_and_confirmations_line_up(
    browser, live_server, tenant, screenshot, width
):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page, base = context.new_page(), live_server.url
    try:
        log_in(page, base, "edna")

        # The document page: nine tool buttons, none over the title or the document's name.
        page.goto(f"{base}{ADMIN}/document/{tenant.handbook.pk}/change/")
        sidebar_alone = _box(page, "#nav-sidebar")
        tools = page.locator(".object-tools li")
        assert tools.count() >= 7
        for title in ("#content h1", "#content h2"):
            for index in range(tools.count()):
                button = tools.nth(index).bounding_box()
                assert not _intersect(button, _box(page, title)), (title, tools.nth(index).inner_text())
        assert not _intersect(_box(page, ".object-tools"), _box(page, "fieldset.module"))
        screenshot(page, f"issue41-document-tools-{width}")

        # A message keeps the file name as written, in the content column: the sidebar does not move.
        _upload_version(page, base)
        message = page.inner_text(".messagelist li")
        assert message.startswith("it-onboarding.md: version 2 is being read"), message
        assert _box(page, "#nav-sidebar")["y"] == sidebar_alone["y"]
        messages, content = _box(page, ".messagelist"), _box(page, "#content")
        assert messages["x"] >= _box(page, "#nav-sidebar")["x"] + _box(page, "#nav-sidebar")["width"] - 1
        assert abs(messages["x"] - content["x"]) < 40
        screenshot(page, f"issue41-message-{width}")
        assert Document.objects.get(pk=tenant.onboarding.pk).version == 2

        # Confirmation pages: "No, take me back" on the confirm button's line, of its height.
        for url, confirm in (
            (f"{ADMIN}/document/{tenant.handbook.pk}/reingest/", "input[type=submit][value='Yes, re-ingest']"),
            (f"{ADMIN}/collection/{tenant.collection.pk}/reindex/", "#content-main input[type=submit]"),
            (f"{ADMIN}/document/{tenant.handbook.pk}/delete/", "#content form input[type=submit]"),
        ):
            page.goto(f"{base}{url}")
            yes, back = _box(page, confirm), _box(page, "a.cancel-link")
            assert abs(yes["y"] - back["y"]) <= 1 and abs(yes["height"] - back["height"]) <= 1, (url, yes, back)
            assert page.inner_text("a.cancel-link") == "No, take me back"
            screenshot(page, f"issue41-confirm-{url.rstrip('/').rsplit('/', 1)[-1]}-{width}")
    finally:
        context.close()
