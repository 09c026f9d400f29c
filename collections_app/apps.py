from django.apps import AppConfig


class CollectionsAppConfig(AppConfig):
    name = "collections_app"
    verbose_name = "Knowledge collections"
    default_auto_field = "django.db.models.BigAutoField"
