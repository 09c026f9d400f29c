from django.apps import AppConfig


class RetrievalConfig(AppConfig):
    name = "retrieval"
    verbose_name = "Retrieval and search audit"
    default_auto_field = "django.db.models.BigAutoField"
    # The web server's workers load the embedding model before their first request: kbsite/warmup.py, called by
    # gunicorn's post_worker_init hook (not here, which every manage.py command and test would run).

    def ready(self) -> None:
        from collections_app.hooks import (
            register_collection_file_table,
            register_cutover_evaluator,
            register_document_references,
            register_recovery_sweep,
        )
        from retrieval import checks  # noqa: F401  (registers the system checks)
        from retrieval.services.golden import GOLDEN_TABLE, evaluations_sweep, gate_evaluate, golden_questions_referring
        from retrieval.services.measure import measures_sweep

        # collections_app never imports retrieval; its flows call these through collections_app/hooks.py:
        # the golden gate of a re-index's cutover, the recovery round's sweeps of killed measures and evaluations, and
        # the golden questions' table in a collection file.
        register_cutover_evaluator(gate_evaluate)
        register_recovery_sweep(measures_sweep)
        register_recovery_sweep(evaluations_sweep)
        # The golden questions travel with a collection file, in a table of their own.
        register_collection_file_table(GOLDEN_TABLE)
        # Deleting a document warns which golden questions refer to it (its confirmation page, the API's answer).
        register_document_references(golden_questions_referring)
