"""API keys' secrets and how a presented one is resolved to its key; tenants found or made by name.

Issuing a key with its reader delegation (which names retrieval's readers) stays in
accounts/issuing.py: accounts imports no content app.
"""

from __future__ import annotations

import hashlib
import secrets

from django.utils import timezone

from accounts.models import ApiKey, Tenant

KEY_PREFIX = "kb_"


def hash_key(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def api_key_assign_secret(*, key: ApiKey) -> str:
    """Give an unsaved key a new secret; only its prefix and hash are kept. Returns the secret."""
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    key.prefix, key.hashed_key = secret[:10], hash_key(secret)
    return secret


def api_key_resolve(*, secret: str) -> ApiKey | None:
    """The live key for a presented secret, or None: a revoked key, or one of a tenant being deleted, is none."""
    keys = ApiKey.objects.select_related("tenant", "agent").filter(tenant__deleting_at__isnull=True, revoked=False)
    key = keys.filter(hashed_key=hash_key(secret)).first()
    if key is not None:
        # One UPDATE per request at most once a minute: keeps "last used" useful
        # in the admin without a write on every search.
        now = timezone.now()
        if key.last_used_at is None or (now - key.last_used_at).total_seconds() > 60:
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
    return key


def tenant_get_or_create(*, name: str) -> Tenant:
    tenant, _ = Tenant.objects.get_or_create(name=name)
    return tenant
