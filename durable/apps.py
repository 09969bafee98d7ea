from django.apps import AppConfig


class DurableConfig(AppConfig):
    name = "durable"
    verbose_name = "Durable execution"
    default_auto_field = "django.db.models.BigAutoField"
