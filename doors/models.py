"""What the doors keep between requests: the requests each API key was allowed, for its rate limits."""

from __future__ import annotations

from django.db import models


class RateHit(models.Model):
    """One request a rate limit allowed, kept for one period. In the database every web process shares, so
    `600/min` means 600 a minute per key however many processes serve it (doors/api/throttles.py)."""

    bucket = models.CharField(max_length=120)  # the limit's scope and the key's id: "search:<uuid>"
    at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["bucket", "at"], name="ratehit_bucket_at")]

    def __str__(self) -> str:
        return f"{self.bucket} at {self.at:%H:%M:%S}"
