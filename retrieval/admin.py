"""Admin of the retrieval app: the searches audit lives in admin_searches.py (importing it registers it)."""

from retrieval import admin_searches  # noqa: F401  (registers the pages)
