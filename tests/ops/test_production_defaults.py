"""Production defaults: DEBUG off, a secret key kept under var/, a clean deploy check, an idempotent demo."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest
from django.conf import settings
from django.core.management import call_command

from accounts.keys import api_key_resolve
from accounts.models import ApiKey


def run_settings(tmp_path, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run `code` under the real settings from a fresh shell's environment (no KB_DEBUG, no KB_SECRET_KEY)."""
    clean = {k: v for k, v in os.environ.items() if k not in {"KB_DEBUG", "KB_SECRET_KEY"}}
    clean.update(
        DJANGO_SETTINGS_MODULE="kbsite.settings",
        KB_VAR_DIR=str(tmp_path),
        DATABASE_URL="postgres://nobody@127.0.0.1:1/never",  # these checks never connect
        **env,
    )
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=settings.BASE_DIR,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_debug_is_off_and_the_secret_key_is_made_once_and_kept_private(tmp_path):
    code = "from django.conf import settings; print(settings.DEBUG, settings.SECRET_KEY)"
    first = run_settings(tmp_path, code)
    assert first.returncode == 0, first.stderr
    debug, key = first.stdout.split()
    assert debug == "False"
    assert len(key) >= 50
    assert stat.S_IMODE((tmp_path / "secret_key").stat().st_mode) == 0o600
    assert run_settings(tmp_path, code).stdout.split() == ["False", key]  # the next command reads the same key
    assert run_settings(tmp_path, code, KB_DEBUG="1").stdout.split()[0] == "True"


def test_the_deploy_check_is_clean_behind_tls(tmp_path):
    code = "from django.core.management import call_command; call_command('check', deploy=True, fail_level='WARNING')"
    checked = run_settings(tmp_path, code, KB_SECURE="1", KB_ALLOWED_HOSTS="kb.example.org")
    assert checked.returncode == 0, checked.stderr
    assert "no issues" in checked.stdout


@pytest.mark.urls("tests.ops.urls_boom")
def test_a_server_error_never_shows_the_debug_page(client, settings):
    settings.DEBUG = False
    client.raise_request_exception = False
    response = client.get("/boom")
    assert response.status_code == 500
    body = response.content.decode()
    assert "Traceback" not in body
    assert "/work/" not in body


def test_setup_demo_twice_keeps_one_key_and_the_password(db, settings, tmp_path, capsys):
    settings.VAR_DIR = tmp_path
    call_command("setup_demo")
    first = capsys.readouterr().out
    call_command("setup_demo")
    second = capsys.readouterr().out
    assert first == second  # the same password and key, printed again
    secret = first.split("API key:")[1].split()[0]
    assert api_key_resolve(secret=secret) is not None
    assert ApiKey.objects.filter(tenant__name="demo", revoked=False).count() == 1
    password = first.split("password:")[1].split()[0]
    from django.contrib.auth import authenticate

    assert authenticate(username="admin", password=password) is not None
    assert stat.S_IMODE((tmp_path / "demo_credentials.json").stat().st_mode) == 0o600


def test_setup_demo_revokes_the_keys_older_versions_issued_on_every_start(db, settings, tmp_path, capsys):
    from accounts.issuing import api_key_create
    from accounts.keys import tenant_get_or_create
    from accounts.models import Role

    settings.VAR_DIR = tmp_path
    tenant = tenant_get_or_create(name="demo")
    for _ in range(3):
        api_key_create(tenant=tenant, role=Role.EDITOR, name="demo editor key")
    call_command("setup_demo")
    assert ApiKey.objects.filter(tenant=tenant, revoked=False).count() == 1
