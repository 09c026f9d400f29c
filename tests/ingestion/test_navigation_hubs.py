"""README files that are navigation hubs (mostly links and headings) are skipped by zip imports and folder
sources unless keep_navigation_readmes is set; the answer and the Build name each one and why."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from collections_app.models import Build, Document
from infra.errors import InvalidIngestOptions
from ingestion.navigation_hubs import is_navigation_hub, is_readme, validate_options
from tests.files.archives import RETURNS, zip_bytes
from tests.files.readmes import AWESOME_LIST, DOCS_INDEX, GYP_DOCS, NODE_API_ASSETS, PROJECT_README

# --- the rule ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [NODE_API_ASSETS, DOCS_INDEX, AWESOME_LIST], ids=["node-assets", "index", "awesome"])
def test_an_index_of_links_and_headings_is_a_hub(text):
    verdict = is_navigation_hub(text)

    assert verdict.hub
    assert verdict.share >= 0.9
    assert verdict.reason.startswith("navigation hub (")
    assert verdict.reason.endswith(" % of its lines are links or headings)")


@pytest.mark.parametrize("text", [PROJECT_README, GYP_DOCS], ids=["project", "gyp-docs"])
def test_a_readme_with_prose_is_not_a_hub_even_with_a_list_of_links(text):
    verdict = is_navigation_hub(text)

    assert not verdict.hub
    assert verdict.link_lines >= 2  # it does hold links: the prose is what keeps it
    assert verdict.share < 0.5


def test_this_projects_own_readme_is_kept():
    verdict = is_navigation_hub((Path(settings.BASE_DIR) / "README.md").read_text())

    assert not verdict.hub
    assert verdict.prose_words > 500


def test_a_title_and_a_badge_do_not_make_an_index():
    verdict = is_navigation_hub("# tool\n\n[![CI](https://ci.example/badge.svg)](https://ci.example)\n")

    assert verdict.share == 1.0
    assert not verdict.hub


def test_only_readme_md_files_are_judged_whatever_their_case():
    assert is_readme("docs/README.md")
    assert is_readme("Readme.markdown")
    assert is_readme("readme.MD")
    assert not is_readme("docs/index.md")
    assert not is_readme("README.txt")


def test_the_option_must_be_a_boolean():
    assert validate_options({"keep_navigation_readmes": True}) == {"keep_navigation_readmes": True}
    with pytest.raises(InvalidIngestOptions, match="keep_navigation_readmes must be true or false"):
        validate_options({"keep_navigation_readmes": "yes"})


# --- zip uploads through the API -----------------------------------------------------------------------------------

SITE = {
    "README.md": PROJECT_README.encode(),
    "docs/README.md": DOCS_INDEX.encode(),
    "awesome/Readme.md": AWESOME_LIST.encode(),
    "docs/customers/returns.md": RETURNS,
}


def test_a_zip_skips_its_hub_readmes_and_names_them_in_the_answer_and_the_build(cast, collection, upload):
    response = upload(cast.editor, collection, "site.zip", zip_bytes(SITE))

    assert response.status_code == 202, response.content
    answer = response.json()
    assert sorted(d["filename"] for d in answer["documents"]) == ["README.md", "docs/customers/returns.md"]
    hubs = [w for w in answer["warnings"] if "navigation hub" in w]
    assert [w.split(":")[0] for w in hubs] == ["docs/README.md", "awesome/Readme.md"]
    assert hubs[0] == (
        "docs/README.md: navigation hub (100 % of its lines are links or headings), "
        "not indexed (the ingest option keep_navigation_readmes keeps it)"
    )
    summary = Build.objects.get(collection=collection, document=None)
    assert [w for w in summary.warnings if "navigation hub" in w] == hubs
    assert summary.refused == []  # skipped on purpose, not unreadable
    # The README with prose is indexed: its installation instructions are a paragraph one can find.
    project = Document.objects.get(collection=collection, source_uri="upload://site.zip/README.md")
    assert project.status == "done"
    assert project.chunks.filter(text__contains="virtual environment").exists()
    assert not Document.objects.filter(collection=collection, source_uri__contains="awesome").exists()


def test_keep_navigation_readmes_imports_the_hubs_too(cast, collection, upload):
    response = upload(
        cast.editor,
        collection,
        "site.zip",
        zip_bytes(SITE),
        ingest_options=json.dumps({"keep_navigation_readmes": True}),
    )

    assert response.status_code == 202, response.content
    answer = response.json()
    assert len(answer["documents"]) == 4
    assert not [w for w in answer["warnings"] if "navigation hub" in w]
    index = Document.objects.get(collection=collection, source_uri="upload://site.zip/docs/README.md")
    assert index.status == "done"
    assert index.chunks.filter(text__contains="Returns").exists()
    summary = Build.objects.get(collection=collection, document=None)
    assert not [w for w in summary.warnings if "navigation hub" in w]


def test_a_zip_of_only_a_hub_is_refused_saying_why(cast, collection, upload):
    response = upload(cast.editor, collection, "docs.zip", zip_bytes({"docs/README.md": DOCS_INDEX.encode()}))

    assert response.status_code == 400
    assert "docs/README.md: navigation hub" in response.json()["file"][0]
    assert not Document.objects.filter(collection=collection).exists()


def test_a_zip_takes_only_the_import_options_and_a_single_file_not_those(cast, collection, upload):
    zipped = upload(
        cast.editor, collection, "site.zip", zip_bytes(SITE), ingest_options=json.dumps({"table_mode": "sheet"})
    )
    single = upload(
        cast.editor,
        collection,
        "README.md",
        DOCS_INDEX.encode(),
        ingest_options=json.dumps({"keep_navigation_readmes": True}),
    )

    assert zipped.status_code == 400
    assert "takes only keep_navigation_readmes" in zipped.json()["ingest_options"][0]
    assert single.status_code == 400
    assert "a file uploaded on its own is always indexed" in single.json()["ingest_options"][0]
    assert not Document.objects.filter(collection=collection).exists()


def test_a_hub_uploaded_on_its_own_is_indexed(cast, collection, upload):
    response = upload(cast.editor, collection, "README.md", DOCS_INDEX.encode())

    assert response.status_code == 202
    assert Document.objects.get(collection=collection).status == "done"


# --- folder sources ------------------------------------------------------------------------------------------------


@pytest.fixture
def folder(tmp_path: Path, settings) -> Path:
    root = tmp_path / "handbook-source"
    (root / "docs" / "customers").mkdir(parents=True)
    (root / "README.md").write_text(PROJECT_README)
    (root / "docs" / "README.md").write_text(DOCS_INDEX)
    (root / "docs" / "customers" / "returns.md").write_bytes(RETURNS)
    settings.KB_COLLECTION_FOLDERS = {"HANDBOOK": str(root)}
    return root


def sync() -> str:
    out = io.StringIO()
    call_command("sync_collection", "handbook", stdout=out, stderr=io.StringIO())
    return out.getvalue()


def folder_paths(collection) -> list[str]:
    return sorted(Document.objects.filter(collection=collection).values_list("source_uri", flat=True))


def test_a_folder_sync_skips_a_hub_and_its_build_says_so_until_the_option_keeps_it(cast, collection, folder, settings):
    out = sync()

    assert folder_paths(collection) == ["folder://handbook/README.md", "folder://handbook/docs/customers/returns.md"]
    build = Build.objects.get(collection=collection, document=None)
    assert build.refused == []
    assert [w for w in build.warnings if "navigation hub" in w] == [
        "docs/README.md: navigation hub (100 % of its lines are links or headings), "
        "not indexed (the ingest option keep_navigation_readmes keeps it)"
    ]
    assert "docs/README.md: navigation hub" in out  # the operator sees it too
    assert str(folder) not in "".join(build.warnings)

    settings.KB_COLLECTION_FOLDER_OPTIONS = {"HANDBOOK": '{"keep_navigation_readmes": true}'}
    sync()

    assert "folder://handbook/docs/README.md" in folder_paths(collection)
    latest = Build.objects.filter(collection=collection, document=None).latest("built_at")
    assert not [w for w in latest.warnings if "navigation hub" in w]

    # Turning the option off again removes the hub, as an exclude pattern would, and says why.
    settings.KB_COLLECTION_FOLDER_OPTIONS = {}
    sync()

    assert "folder://handbook/docs/README.md" not in folder_paths(collection)
    latest = Build.objects.filter(collection=collection, document=None).latest("built_at")
    assert any(w.startswith("docs/README.md: navigation hub") for w in latest.warnings)


@pytest.mark.parametrize(
    ("value", "message"),
    [("keep", "is not JSON"), ('{"table_mode": "sheet"}', "takes only keep_navigation_readmes")],
)
def test_bad_folder_options_stop_the_sync_naming_the_variable(cast, collection, folder, settings, value, message):
    settings.KB_COLLECTION_FOLDER_OPTIONS = {"HANDBOOK": value}

    with pytest.raises(CommandError, match=message) as refused:
        sync()

    assert "KB_COLLECTION_HANDBOOK_FOLDER_OPTIONS" in str(refused.value)
    assert not Document.objects.filter(collection=collection).exists()
