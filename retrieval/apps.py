import threading

from django.apps import AppConfig
from django.conf import settings


class RetrievalConfig(AppConfig):
    name = "retrieval"
    verbose_name = "Retrieval and search audit"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from collections_app.hooks import register_cutover_evaluator, register_recovery_sweep
        from retrieval.golden import gate_evaluate
        from retrieval.measure import measures_sweep

        # collections_app never imports retrieval; its flows call these through collections_app/hooks.py:
        # the golden gate of a re-index's cutover, and the recovery round's sweep of killed measures.
        register_cutover_evaluator(gate_evaluate)
        register_recovery_sweep(measures_sweep)
        # Loading the default model takes about a second; the web server and
        # the cluster do it at start (make run sets this) so the first search
        # or upload does not pay for it.
        if settings.KB_WARM_EMBEDDING:
            threading.Thread(target=_warm, name="warm-embedding", daemon=True).start()


def _warm() -> None:
    from embedding import get_embedder

    get_embedder(settings.KB_DEFAULT_EMBEDDING).embed_query("warm-up")
