"""System checks of the retrieval app, run at start by every manage.py command that checks (serve, migrate, ...)."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.db import DatabaseError

MAX_NAMED = 10


@checks.register()
def judges_have_an_endpoint(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """A judge enabled on a collection while KB_LLM_URL is not set never runs: say so when the server starts."""
    from retrieval.services.judges import judged_collections_without_endpoint

    try:
        names = judged_collections_without_endpoint()
    except DatabaseError:  # no database yet, or not migrated: nothing to say about judges
        return []
    if not names:
        return []
    shown = ", ".join(names[:MAX_NAMED]) + (f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else "")
    return [
        checks.Warning(
            f"{len(names)} collection(s) have a judge enabled but KB_LLM_URL is not set: {shown}. Their searches "
            "are not judged and answer refused: null.",
            hint="Set KB_LLM_URL to an OpenAI-compatible chat endpoint, or disable those judges "
            "(admin: Judges, or DELETE /api/manage/collections/{id}/judge).",
            id="retrieval.W001",
        )
    ]
