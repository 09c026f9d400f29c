import threading

from django.apps import AppConfig
from django.conf import settings


class RetrievalConfig(AppConfig):
    name = "retrieval"
    verbose_name = "Retrieval and search audit"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Loading the default model takes about a second; the web server and
        # the cluster do it at start (make run sets this) so the first search
        # or upload does not pay for it.
        if settings.KB_WARM_EMBEDDING:
            threading.Thread(target=_warm, name="warm-embedding", daemon=True).start()


def _warm() -> None:
    from embedding import get_embedder

    get_embedder(settings.KB_DEFAULT_EMBEDDING).embed_query("warm-up")
