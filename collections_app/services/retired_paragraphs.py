"""Retired paragraphs are remembered for KB_RETIRED_DAYS, then pruned (issue 39).

A trigger records every paragraph that leaves the chunk table (models.RetiredParagraph), so the citation check can
say "replaced or deleted since, and when" of an id an answer cited. An answer is checked within days of being given,
not years: past the setting's days the row only grows the table (a re-index of 100,000 paragraphs adds 100,000), and
a citation of it reads as an id that does not exist. The cluster's recovery round prunes them (run_cluster), at most
once an hour; `storage_cleanup` does it on an operator's word.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import connection
from django.utils import timezone

from collections_app.models import RetiredParagraph

# Rows deleted per statement: each statement is short, so a prune never holds back the trigger's inserts for long.
BATCH = 10_000


def retired_paragraphs_prune(*, now: dt.datetime | None = None) -> int:
    """Delete the rows retired more than KB_RETIRED_DAYS ago (0: keep them all); how many went."""
    days = settings.KB_RETIRED_DAYS
    if days <= 0:
        return 0
    cutoff = (now or timezone.now()) - dt.timedelta(days=days)
    table = RetiredParagraph._meta.db_table
    removed = 0
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                f"DELETE FROM {table} WHERE paragraph_id IN "
                f"(SELECT paragraph_id FROM {table} WHERE retired_at < %s LIMIT %s)",
                [cutoff, BATCH],
            )
            removed += cursor.rowcount
        if cursor.rowcount < BATCH:
            return removed
