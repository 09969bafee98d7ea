from django.apps import AppConfig


class DurableConfig(AppConfig):
    name = "durable"
    verbose_name = "Durable execution"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Connects the signal that NOTIFYs web processes of each new RunEvent.
        from durable import events  # noqa: F401
