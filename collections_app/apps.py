from django.apps import AppConfig


class CollectionsAppConfig(AppConfig):
    name = "collections_app"
    verbose_name = "Knowledge collections"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from doors.api import schema  # noqa: F401 - registers the OpenAPI auth scheme
