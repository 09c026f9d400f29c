from __future__ import annotations

import pytest

from tests.retrieval.services.golden.corpus import corpus_upload


@pytest.fixture
def corpus(cast, collection, upload):
    """A small real corpus for golden questions: office.html and travel.html in the cast's collection."""
    return corpus_upload(cast, collection, upload)
