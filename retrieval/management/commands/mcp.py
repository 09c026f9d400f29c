"""manage.py mcp: the MCP server over stdio, for an agent that starts it as a subprocess.

The API key it acts as comes from KB_MCP_KEY (an environment variable, never an argument: arguments show in
process lists). Messages go over stdin/stdout; nothing else is written to stdout.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from accounts.keys import api_key_resolve
from retrieval.mcp import serve_stdio


class Command(BaseCommand):
    help = "Serve the MCP tools (search, collections) over stdio as the API key in KB_MCP_KEY."

    def handle(self, *args: Any, **options: Any) -> None:
        secret = settings.KB_MCP_KEY.strip()
        if not secret:
            raise CommandError("set KB_MCP_KEY to the API key the MCP server acts as (create one: create_api_key)")
        if api_key_resolve(secret=secret) is None:
            raise CommandError("KB_MCP_KEY is not a valid API key (unknown or revoked)")
        serve_stdio(secret=secret)
