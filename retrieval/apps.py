from django.apps import AppConfig


class RetrievalConfig(AppConfig):
    name = "retrieval"
    verbose_name = "Retrieval and search audit"
    default_auto_field = "django.db.models.BigAutoField"
    # The web server's workers load the embedding model before their first request: kbsite/warmup.py, called by
    # gunicorn's post_worker_init hook (not here, which every manage.py command and test would run).

    def ready(self) -> None:
        from retrieval import checks  # noqa: F401  (registers the system checks)
