"""Exclude patterns: .gitignore-like globs on paths relative to a folder source or zip root."""

from __future__ import annotations

import pytest

from ingestion.paths import is_excluded, is_junk


@pytest.mark.parametrize(
    ("pattern", "path", "excluded"),
    [
        ("**/README.md", "README.md", True),  # ** spans no folder too
        ("**/README.md", "guide/deep/README.md", True),
        ("**/README.md", "guide/README.mdx", False),
        ("**/README.md", "guide/readme.md", False),  # case matters, as on the server's disk
        ("*.tmp", "a/b/c.tmp", True),  # no slash: a name at any depth
        ("drafts", "guide/drafts/a.md", True),
        ("drafts/", "drafts/a/b.md", True),  # a folder and everything in it
        ("/drafts/**", "guide/drafts/a.md", False),  # anchored at the root
        ("guide/*.md", "guide/deep/a.md", False),  # * stays within one folder
        ("guide/**/a.md", "guide/a.md", True),
        ("notes-[0-9].txt", "notes-7.txt", True),
        ("notes-[!0-9].txt", "notes-7.txt", False),
        ("[z-a].txt", "[z-a].txt", True),  # a pattern that is no valid class matches itself
    ],
)
def test_exclude_patterns(pattern, path, excluded):
    assert is_excluded(path, [pattern]) is excluded


@pytest.mark.parametrize(
    ("path", "junk"),
    [
        (".git/config", True),
        ("guide/.DS_Store", True),
        ("__MACOSX/guide/._a.md", True),
        ("~$report.docx", True),
        ("guide/a.md", False),
    ],
)
def test_files_nobody_means_to_import(path, junk):
    assert is_junk(path) is junk
