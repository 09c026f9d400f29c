"""Convert the default embedding model for its faster runtime once (`make run` calls it before the servers start)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from embedding import embedding_runtime_prepare


class Command(BaseCommand):
    help = "Convert the default embedding model's weights for its runtime once (under var/), and say what runs it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--rebuild", action="store_true", help="discard an earlier (damaged) conversion first")

    def handle(self, *args: Any, **options: Any) -> None:
        alias = settings.KB_DEFAULT_EMBEDDING
        runtime = embedding_runtime_prepare(alias=alias, rebuild=options["rebuild"])
        self.stdout.write(f"embedding model {alias}: {runtime}")
