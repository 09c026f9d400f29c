import os
import threading

from django.apps import AppConfig


class RetrievalConfig(AppConfig):
    name = "retrieval"
    verbose_name = "Retrieval and search audit"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Loading the default model takes about a second; the web server and
        # the cluster do it at start (make run sets this) so the first search
        # or upload does not pay for it.
        if os.environ.get("KB_WARM_EMBEDDING") == "1":
            threading.Thread(target=_warm, name="warm-embedding", daemon=True).start()


def _warm() -> None:
    from django.conf import settings

    from embedding import get_embedder

    get_embedder(settings.KB_DEFAULT_EMBEDDING).embed_query("warm-up")
