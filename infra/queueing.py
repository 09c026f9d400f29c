"""Queueing a django-q2 task once the transaction commits, under the name the admin's task lists show.

Tasks take ids, never rows, and are queued with `transaction.on_commit` (docs/ARCHITECTURE.md): a worker must
never read a row its transaction has not committed yet, nor run for one that was rolled back.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

# How much of a file's or a collection's name a task's name keeps: the task lists stay one line a task.
SHOWN_CHARS = 44


def task_name_shown(name: str, what: str) -> str:
    """`<name> (<what>)`, the name cut to SHOWN_CHARS with an ellipsis: the name for a person reading the task
    list, `what` (with the row's id) for whoever looks a task up (the recovery finds "ingest document <id>")."""
    shown = name if len(name) <= SHOWN_CHARS else name[: SHOWN_CHARS - 1] + "…"
    return f"{shown} ({what})"


def task_queue_on_commit(func: str, *args: Any, task_name: str, group: str, **options: Any) -> None:
    """Queue `func(*args)` once the current transaction commits (at once outside one)."""
    from django_q.tasks import async_task  # read at call time, as tests replace it

    transaction.on_commit(lambda: async_task(func, *args, task_name=task_name, group=group, **options))
