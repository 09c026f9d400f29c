from django.apps import AppConfig


class DoorsConfig(AppConfig):
    name = "doors"
    verbose_name = "Door plumbing"
    default_auto_field = "django.db.models.BigAutoField"
