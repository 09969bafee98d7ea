from django.apps import AppConfig


class DurableConfig(AppConfig):
    name = "durable"
    verbose_name = "Durable execution"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Records every login in the audit trail (durable.audit).
        from django.contrib.auth.signals import user_logged_in

        from durable.audit import record_login

        # Connect the signals that NOTIFY web processes of each new RunEvent (records)
        # and delete a deleted cron's Celery beat task (beat).
        from durable.engine import beat, records  # noqa: F401

        user_logged_in.connect(record_login, dispatch_uid="durable-audit-login")

        # Graphs compiled with a DjangoSaver get their own schema types back.
        from durable.persistence.serde import learn_schema_types_at_compile

        learn_schema_types_at_compile()
