"""Per-key rate limits (429 with Retry-After), rates from settings so a deployment or a test can change them.

Counted as a sliding log in PostgreSQL, which every web process shares: each allowed request is a row
(doors.models.RateHit) kept for one period, and a request is allowed while the key has fewer rows than
its rate in the last period. One key's requests take their turn under a transaction-scoped advisory lock, so
two processes never both take the last place; the turn is one statement (kb_rate_take, a database function).
A log, not a counter per clock window: no burst of twice the rate across a window's edge, and Retry-After is
exactly when the oldest counted request leaves.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import connection
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

if TYPE_CHECKING:  # rest_framework.views reads the permission and throttle settings: a runtime import circles
    from rest_framework.views import APIView


class KeyRateThrottle(BaseThrottle):
    """Counts requests per API key (not per address: many agents may share one NAT, one agent many hosts).

    Reads its rate from settings on every request, so override_settings works. An empty rate switches the
    limit off.
    """

    scope = ""

    def rate(self) -> str:
        raise NotImplementedError

    def __init__(self) -> None:
        self.retry_after: float | None = None

    def allow_request(self, request: Request, view: APIView) -> bool:
        rate = self.rate()
        if not rate or request.auth is None:  # no limit, or refused by authentication anyway
            return True
        limit, seconds = parse_rate(rate)
        oldest = rate_take(f"{self.scope}:{request.auth.pk}", limit=limit, period=seconds)
        if oldest is None:
            return True
        self.retry_after = (oldest + timedelta(seconds=seconds) - timezone.now()).total_seconds()
        return False

    def wait(self) -> float | None:
        # Whole seconds, at least one: Retry-After is an integer, and 0 would invite an immediate retry.
        return max(1, math.ceil(self.retry_after)) if self.retry_after is not None else None


def parse_rate(rate: str) -> tuple[int, int]:
    """ "600/min" → (600, 60): DRF's spelling (s, m, h, d by their first letter), checked by settings.env_rate."""
    count, period = rate.split("/")
    return int(count), {"s": 1, "m": 60, "h": 3600, "d": 86400}[period[0]]


def rate_take(bucket: str, *, limit: int, period: float) -> datetime | None:
    """Take one of the bucket's `limit` places in the last `period` seconds: None when taken, else the time
    of the oldest request still counted (the place frees `period` after it). One statement: the database
    function kb_rate_take (doors/migrations/0002) holds the key's lock, forgets, counts and takes."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT kb_rate_take(%s, %s, %s)", [bucket, limit, period])
        oldest: datetime | None = cursor.fetchone()[0]
    return oldest


class SearchThrottle(KeyRateThrottle):
    scope = "search"

    def rate(self) -> str:
        return str(settings.KB_THROTTLE_SEARCH)


class UploadThrottle(KeyRateThrottle):
    scope = "upload"

    def rate(self) -> str:
        return str(settings.KB_THROTTLE_UPLOAD)


class UploadsOnly(UploadThrottle):
    """The upload limit on a view that also lists: only POST counts."""

    def allow_request(self, request: Request, view: APIView) -> bool:
        if request.method != "POST":
            return True
        return super().allow_request(request, view)
