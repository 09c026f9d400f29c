"""The demo tenant, its admin login and one editor API key: made once, printed on every start.

Idempotent: the admin password is never reset and the key is never re-issued. Keys are stored
hashed and passwords as hashes, so the demo's own secrets are kept in var/demo_credentials.json
(mode 600, beside var/secret_key) to be printed again. A password changed since is not printed
(it is not ours to know); a demo key revoked since is replaced by one new key.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from accounts.issuing import api_key_create
from accounts.keys import hash_key, tenant_get_or_create
from accounts.models import ApiKey, Membership, Role

DEMO_KEY_NAME = "demo editor key"


def credentials_path() -> Path:
    return Path(settings.VAR_DIR) / "demo_credentials.json"


def _read_credentials() -> dict[str, str]:
    try:
        return dict(json.loads(credentials_path().read_text()))
    except (FileNotFoundError, ValueError):
        return {}


def _write_credentials(credentials: dict[str, str]) -> None:
    path = credentials_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(credentials, handle)
    os.replace(draft, path)


class Command(BaseCommand):
    help = "Create the demo tenant with an admin login and one editor API key, once; print them on every run."

    @transaction.atomic
    def handle(self, *args: Any, **options: Any) -> None:
        credentials = _read_credentials()
        tenant = tenant_get_or_create(name="demo")
        User = get_user_model()
        user = User.objects.filter(username="admin").first()
        if user is None:
            password = credentials.get("password") or secrets.token_urlsafe(12)
            user = User.objects.create_superuser("admin", "admin@example.com", password)
        else:
            password = credentials.get("password", "")
            if not password or not user.check_password(password):
                password = ""  # changed by its owner (or made elsewhere): kept, and not ours to show
        Membership.objects.get_or_create(user=user, tenant=tenant, defaults={"role": Role.ADMIN})

        demo_keys = ApiKey.objects.filter(tenant=tenant, name=DEMO_KEY_NAME, revoked=False)
        secret = credentials.get("api_key", "")
        kept = demo_keys.filter(hashed_key=hash_key(secret)).first() if secret else None
        # Exactly one demo key: earlier versions issued one per start; those are revoked.
        (demo_keys.exclude(pk=kept.pk) if kept else demo_keys).update(revoked=True)
        if kept is None:
            secret = api_key_create(tenant=tenant, role=Role.EDITOR, name=DEMO_KEY_NAME).secret
        if password:
            credentials["password"] = password
        else:
            credentials.pop("password", None)
        credentials["api_key"] = secret
        _write_credentials(credentials)

        port = settings.PORT
        shown = password or "(not known here: set one with `manage.py changepassword admin`)"
        self.stdout.write("")
        self.stdout.write("kbsite demo tenant 'demo' is ready.")
        self.stdout.write(f"  admin:    http://127.0.0.1:{port}/admin/  user: admin  password: {shown}")
        self.stdout.write(f"  API key:  {secret}   (editor, tenant demo)")
        self.stdout.write("")
