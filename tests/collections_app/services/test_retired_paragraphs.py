"""Retired paragraphs are kept KB_RETIRED_DAYS, then the cluster's recovery round prunes them (issue 39, item 11)."""

from __future__ import annotations

import datetime as dt
import io

import pytest
from django.core.management import call_command
from django.utils import timezone

from collections_app.management.commands import run_cluster
from collections_app.models import Chunk, Document, RetiredParagraph


@pytest.fixture
def retired(cast, collection) -> tuple[RetiredParagraph, RetiredParagraph]:
    """Two paragraphs deleted (the trigger remembers them): one 91 days ago, one yesterday."""
    document = Document.objects.create(
        tenant=cast.tenant, collection=collection, content_hash="0" * 64, filename="notes.txt", status="done"
    )
    rows = [
        Chunk.objects.create(tenant=cast.tenant, collection=collection, document=document, text=f"Row {n}.")
        for n in (0, 1)
    ]
    Chunk.objects.filter(document=document).delete()
    old, recent = (RetiredParagraph.objects.get(paragraph_id=row.pk) for row in rows)
    for row, days in ((old, 91), (recent, 1)):
        RetiredParagraph.objects.filter(pk=row.pk).update(retired_at=timezone.now() - dt.timedelta(days=days))
    return old, recent


# The recovery round closes the connection when it ends (close_old_connections), as between two rounds: outside a
# test transaction.
@pytest.mark.django_db(transaction=True)
def test_the_recovery_round_prunes_what_retired_longer_ago_than_the_setting(settings, retired) -> None:
    settings.KB_RETIRED_DAYS = 90
    _old, recent = retired

    run_cluster.Command()._recover(cluster_start=False)

    assert list(RetiredParagraph.objects.values_list("pk", flat=True)) == [recent.pk]


@pytest.mark.django_db(transaction=True)
def test_zero_days_keeps_every_retired_paragraph(settings, retired) -> None:
    settings.KB_RETIRED_DAYS = 0
    run_cluster.Command()._recover(cluster_start=False)
    assert RetiredParagraph.objects.count() == 2


def test_storage_cleanup_prunes_them_on_an_operators_word(settings, retired) -> None:
    settings.KB_RETIRED_DAYS = 30
    out = io.StringIO()
    call_command("storage_cleanup", "--min-age", "0", stdout=out)
    assert list(RetiredParagraph.objects.values_list("pk", flat=True)) == [retired[1].pk]
    assert "1 retired paragraph(s) older than 30 days pruned" in out.getvalue()
