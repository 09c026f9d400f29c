"""Operations tests: real subprocesses (a django-q2 cluster, the `make run` supervisor), real signals."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "ops: starts real processes (cluster, web server, PostgreSQL) and kills them; about a minute each"
    )
