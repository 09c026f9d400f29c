"""What every benchmark script does first: find the project, set up Django on a migrated database."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup_django(*, database: bool = True) -> None:
    """`database=False` for a script that reads no table (it then runs beside unapplied migrations)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    os.environ.setdefault("KB_DEBUG", "1")
    os.environ.setdefault("KB_SECRET_KEY", "bench")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbsite.settings")
    import django

    django.setup()
    if not database:
        return

    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    if executor.migration_plan(executor.loader.graph.leaf_nodes()):
        raise SystemExit("the database has unapplied migrations: run `.venv/bin/python manage.py migrate` first")


def tenant_remove(tenant_id: uuid.UUID | str) -> None:
    """Delete a bench's scratch tenant as the platform does (one flag, then its rows in batches), the removal run here
    rather than queued: a bench has no cluster, and an ORM cascade through a large collection takes minutes."""
    from unittest import mock

    from accounts.models import Tenant
    from collections_app.services.deletion import tenant_delete, tenant_rows_remove

    tenant = Tenant.all_objects.filter(pk=tenant_id).first()
    if tenant is None:
        return
    with mock.patch("django_q.tasks.async_task"):  # the removal is run below, not left in the queue
        tenant_delete(tenant=tenant)
    tenant_rows_remove(tenant_id=tenant_id)
