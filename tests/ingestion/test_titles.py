"""A file's name becomes the breadcrumb's title only when it reads as words."""

from __future__ import annotations

import pytest

from ingestion.titles import reads_as_words, title_from_filename


@pytest.mark.parametrize(
    "filename",
    [
        "p31.pdf",
        "12345.docx",
        "IMG_2034.jpg",
        "DSC00042.JPG",
        "scan-0001.pdf",
        "Scan 2026-03-14.pdf",
        "9b74c9897bac770ffc029102a200c5de.pdf",  # an md5
        "deadbeefcafebabe.txt",  # a hash of letters only
        "2026-03-14.pdf",
        "20260314_101502.docx",
        "doc1.txt",
        "xkcd.md",
    ],
)
def test_a_stem_that_is_a_code_a_number_a_hash_or_a_date_stamp_is_no_title(filename) -> None:
    assert title_from_filename(filename) == ""


@pytest.mark.parametrize(
    ("filename", "title"),
    [
        ("Annual leave policy.docx", "Annual leave policy"),
        ("annual_leave-policy.pdf", "annual leave policy"),
        ("TravelExpenses.xlsx", "Travel Expenses"),
        ("Q3 report.xlsx", "Q3 report"),
        ("Minutes 2026-03-14.md", "Minutes 2026-03-14"),  # a date beside words stays, hyphens and all
        ("Godišnji odmor 2026.pdf", "Godišnji odmor 2026"),
        ("Правилник за работа.docx", "Правилник за работа"),
        ("תקנון עובדים.pdf", "תקנון עובדים"),
    ],
)
def test_a_stem_that_reads_as_words_is_the_title(filename, title) -> None:
    assert title_from_filename(filename) == title


def test_words_of_cameras_and_scanners_alone_are_no_title() -> None:
    assert not reads_as_words("IMG scan copy final")
    assert reads_as_words("scan of the lease contract")
