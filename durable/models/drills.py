"""The fault drills' own tables (``durable.drills``): the reports of past drill runs, and
the executions of the drill graph's nodes, counted in the database because the workers
that run them may be other machines."""

from django.db import models


class DrillReport(models.Model):
    """One ``manage.py drill`` (or the admin's button): when, who asked, how many workers
    answered, and one result per drill in ``results``: ``[{"name", "outcome"
    ("passed" | "failed" | "skipped"), "seconds" (recovery time, or null), "detail"}]``."""

    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    requested_by = models.CharField(max_length=150, blank=True, default="")
    workers = models.PositiveIntegerField(
        null=True,
        default=0,
        help_text="Workers that answered a ping; empty when the broker cannot ping workers.",
    )
    passed = models.BooleanField(help_text="No drill failed.")
    results = models.JSONField(default=list)

    class Meta:
        ordering = ["-started_at", "-pk"]

    def __str__(self):
        return f"drills at {self.started_at:%Y-%m-%d %H:%M:%S} ({self.verdict})"

    # The embedded broker (kombu's SQLAlchemy transport) has no broadcast: its workers
    # run the drills but cannot answer a ping, so they are not counted, not 0.
    CANNOT_PING = "the broker cannot ping workers (the embedded one has no broadcast)"

    @property
    def workers_said(self) -> str:
        """``"2 worker(s) answered"``, or that they could not be counted."""
        if self.workers is None:
            return f"workers not counted: {self.CANNOT_PING}"
        return f"{self.workers} worker(s) answered"

    @property
    def verdict(self) -> str:
        return "passed" if self.passed else "failed"


class DrillExecution(models.Model):
    """One execution of a drill node (``durable.drills.graph``): which thread
    (LangGraph's ``thread_id``), node, run attempt, worker and process, when, and what it
    did (``detail``). Deleted with the drill's threads."""

    thread_id = models.CharField(max_length=255)
    node = models.CharField(max_length=100)
    attempt = models.PositiveIntegerField()
    worker = models.CharField(max_length=255, blank=True, default="")
    pid = models.PositiveIntegerField()
    at = models.DateTimeField()
    detail = models.JSONField(default=dict)

    class Meta:
        ordering = ["at", "pk"]
        indexes = [models.Index(fields=["thread_id", "node"])]
