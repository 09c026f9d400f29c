"""Every admin list takes a page number a person can act on: a bad one is a 400 that says what it must be (issue 39,
item 9). Generated from the registered admin classes (every changelist's `p`) and the lists of the admin's own
pages (a document's paragraphs, `page`), so a new list is covered without anyone naming it."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from collections_app.models import Document
from doors.api.pages import MAX_OFFSET

BAD = ["-1", "0", "abc", "1.5", "99999999999999999999", str(MAX_OFFSET + 1)]
REGISTERED = sorted(admin.site._registry, key=lambda model: model._meta.label)


@pytest.fixture
def root() -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw"))
    return client


@pytest.mark.parametrize("model", REGISTERED, ids=[m._meta.label for m in REGISTERED])
def test_a_changelist_page_number_that_cannot_be_used_is_a_400_saying_why(db, root, model) -> None:
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    assert root.get(url, {"p": "1"}).status_code == 200
    for value in BAD:
        answer = root.get(url, {"p": value})
        assert answer.status_code == 400, (value, answer.status_code)
        assert f"p (the page number) must be a whole number from 1 to {MAX_OFFSET}" in answer.content.decode()


def test_the_paragraphs_page_number_is_checked_the_same_way(cast, collection, root) -> None:
    document = Document.objects.create(
        tenant=cast.tenant, collection=collection, content_hash="0" * 64, filename="notes.txt", status="done"
    )
    url = reverse("admin:collections_app_document_paragraphs", args=[document.pk])
    assert root.get(url, {"page": "1"}).status_code == 200
    for value in BAD:
        answer = root.get(url, {"page": value})
        assert answer.status_code == 400, (value, answer.status_code)
        assert f"page (the page number) must be a whole number from 1 to {MAX_OFFSET}" in answer.content.decode()
