"""Per-key rate limits (429 with Retry-After), rates from settings so a deployment or a test can change them."""

from __future__ import annotations

from django.conf import settings
from django.core.cache import caches
from rest_framework.throttling import SimpleRateThrottle


class KeyRateThrottle(SimpleRateThrottle):
    """Counts requests per API key (not per address: many agents may share one NAT, one agent many hosts).

    DRF's ScopedRateThrottle keys on `user.pk`, which a key principal does not have, and reads its rates
    once at import; this one reads `settings.<setting>` on every request, so override_settings works.
    An empty rate switches the limit off.
    """

    setting = ""

    def __init__(self) -> None:
        # Deliberately not super().__init__(): that reads the rate from DRF's import-time settings.
        self.cache = caches[settings.KB_THROTTLE_CACHE]

    def allow_request(self, request, view) -> bool:  # type: ignore[no-untyped-def]
        self.rate = self.get_rate()
        if not self.rate:
            return True
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)

    def get_rate(self) -> str | None:
        return getattr(settings, self.setting, "") or None

    def get_cache_key(self, request, view) -> str | None:  # type: ignore[no-untyped-def]
        if request.auth is None:
            return None  # refused by authentication anyway
        return f"throttle_{self.scope}_{request.auth.pk}"


class SearchThrottle(KeyRateThrottle):
    scope = "search"
    setting = "KB_THROTTLE_SEARCH"


class UploadThrottle(KeyRateThrottle):
    scope = "upload"
    setting = "KB_THROTTLE_UPLOAD"


class UploadsOnly(UploadThrottle):
    """The upload limit on a view that also lists: only POST counts."""

    def allow_request(self, request, view) -> bool:  # type: ignore[no-untyped-def]
        if request.method != "POST":
            return True
        return super().allow_request(request, view)
