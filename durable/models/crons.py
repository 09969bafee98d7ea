"""``Cron``: a schedule that starts runs, as LangGraph's Agent Server names it."""

import uuid

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from durable.models.assistants import Assistant
from durable.models.runs import Thread
from durable.models.tenancy import Tenant, TenantQuerySet


class Cron(models.Model):
    """A schedule of runs of one graph, in one tenant.

    ``schedule`` is a five-field cron expression read in ``timezone`` (an IANA name);
    ``end_time`` (aware) ends it. With a ``thread`` every fire runs on that thread;
    without one each fire starts a new thread, which is deleted once its run has ended
    when ``on_run_completed`` is ``delete``, kept when ``keep``. ``payload`` holds what
    each run is started with, in the Agent Server's terms (``input``, ``config``,
    ``context``, ``metadata``, ``multitask_strategy``, ...). ``assistant_id`` is kept as
    the caller gave it; ``graph`` is the registered graph it resolved to.

    ``next_run_date`` is the slot the next fire claims (``durable.engine.crons.fire``):
    a fire moves it on with a compare-and-set, so a slot starts at most one run.
    ``last_run_date`` is the slot of the last fire (not one skipped as missed);
    ``last_error`` says why that fire started no run (``""`` when it started one). This
    row is the
    source of truth; django-celery-beat's ``PeriodicTask`` named ``cron:<cron_id>``
    only wakes the fire up, and follows it (``durable.engine.crons``).
    """

    class OnRunCompleted(models.TextChoices):
        DELETE = "delete"
        KEEP = "keep"

    cron_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="crons")
    objects = TenantQuerySet.as_manager()
    # A thread's crons go with it, as the Agent Server deletes them with their thread.
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, null=True, blank=True, related_name="crons"
    )
    # As the caller named it: a stored assistant's UUID, or a registered graph's name.
    assistant_id = models.CharField(max_length=255)
    # The stored assistant it names, if any: its crons go with it, as a thread's do (else
    # each fire would be refused, every minute, for an assistant no longer there).
    stored_assistant = models.ForeignKey(
        Assistant, on_delete=models.CASCADE, null=True, blank=True, related_name="crons"
    )
    graph = models.CharField(max_length=100)
    schedule = models.CharField(max_length=200)
    timezone = models.CharField(max_length=64, default="UTC")
    end_time = models.DateTimeField(null=True, blank=True)
    enabled = models.BooleanField(default=True)
    on_run_completed = models.CharField(
        max_length=8, choices=OnRunCompleted.choices, default=OnRunCompleted.DELETE
    )
    payload = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)
    metadata = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)
    user_id = models.CharField(max_length=150, blank=True, default="")
    next_run_date = models.DateTimeField(null=True, blank=True)
    last_run_date = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["tenant", "-created_at"], name="cron_tenant_time")]

    def __str__(self):
        return f"cron {self.cron_id} ({self.schedule})"

    @property
    def task_name(self) -> str:
        """The name of its django-celery-beat ``PeriodicTask``."""
        return f"cron:{self.cron_id}"
