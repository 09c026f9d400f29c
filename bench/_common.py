"""What every benchmark script does first: find the project, set up Django on a migrated database."""

from __future__ import annotations

import os
import sys
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
