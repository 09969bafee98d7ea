"""The append-only audit trail and the retention policies."""

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from durable.models.checkpoints import THREAD_ID_MAX_LENGTH
from durable.models.tenancy import Tenant, TenantQuerySet


class AuditEventQuerySet(TenantQuerySet):
    def update(self, **kwargs):
        raise PermissionError("audit events are append-only")

    def delete(self):
        raise PermissionError("audit events are append-only")


class AuditEvent(models.Model):
    """One operator action, append-only: who (``actor``), in which tenant, did what
    (``action``) to what (thread, checkpoint, run), why (``reason``), and the thread's
    newest checkpoint before and after. Rows are never changed or deleted: the model
    and its queryset refuse to, and a database trigger (migration 0010) refuses any
    UPDATE that goes around them."""

    class Action(models.TextChoices):
        START = "start"
        RESUME = "resume"
        FORK = "fork"
        CLOSE = "close"
        REPLAY = "replay"
        CANCEL = "cancel"
        DELETE = "delete"
        PRUNE = "prune"
        PATCH_STATE = "patch_state"
        ASSISTANT_CREATE = "assistant_create"
        ASSISTANT_UPDATE = "assistant_update"
        ASSISTANT_SET_LATEST = "assistant_set_latest"
        ASSISTANT_DELETE = "assistant_delete"
        CRON_CREATE = "cron_create"
        CRON_UPDATE = "cron_update"
        CRON_DELETE = "cron_delete"
        RETENTION_CHANGE = "retention_change"
        TENANT_SETTINGS = "tenant_settings"
        TOKEN_CREATE = "token_create"
        TOKEN_REVOKE = "token_revoke"
        LOGIN = "login"
        REVEAL = "reveal"

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    tenant = models.ForeignKey(
        Tenant, on_delete=models.PROTECT, null=True, blank=True, related_name="audit_events"
    )
    actor = models.CharField(max_length=200)
    action = models.CharField(max_length=32, choices=Action.choices)
    # Plain values, not foreign keys: the trail outlives what it names.
    thread_id = models.CharField(max_length=THREAD_ID_MAX_LENGTH, blank=True)
    thread_name = models.CharField(max_length=THREAD_ID_MAX_LENGTH, blank=True)
    run_id = models.BigIntegerField(null=True, blank=True)
    checkpoint_id = models.CharField(max_length=64, blank=True)
    checkpoint_before = models.CharField(max_length=64, blank=True)
    checkpoint_after = models.CharField(max_length=64, blank=True)
    reason = models.TextField(blank=True)
    detail = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["tenant", "-created_at"], name="audit_tenant_time")]

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise PermissionError("audit events are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise PermissionError("audit events are append-only")

    def __str__(self):
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.actor} {self.action}"


class RetentionPolicy(models.Model):
    """How long a tenant keeps history, for all its graphs or for one (``graph``).

    Threads not updated for ``max_age`` are either deleted (``delete``) or pruned to
    their latest checkpoint (``keep_latest``); with ``keep_last`` set, every thread
    keeps only its last N checkpoints, whatever its age. A graph's own policy wins over
    the tenant's catch-all one (``graph`` blank). Applied by ``durable.retention``."""

    class Strategy(models.TextChoices):
        DELETE = "delete"
        KEEP_LATEST = "keep_latest"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="retention")
    objects = TenantQuerySet.as_manager()
    graph = models.CharField(max_length=100, blank=True, help_text="Blank: every graph.")
    max_age = models.DurationField(null=True, blank=True, help_text="e.g. 30 00:00:00")
    strategy = models.CharField(
        max_length=16, choices=Strategy.choices, default=Strategy.KEEP_LATEST
    )
    keep_last = models.PositiveIntegerField(null=True, blank=True)
    enabled = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "retention policies"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "graph"], name="retention_once_per_graph"),
            models.CheckConstraint(
                condition=models.Q(max_age__isnull=False) | models.Q(keep_last__isnull=False),
                name="retention_has_a_limit",
            ),
            models.CheckConstraint(
                condition=models.Q(keep_last__isnull=True) | models.Q(keep_last__gte=1),
                name="retention_keeps_one",
            ),
        ]

    def __str__(self):
        return f"{self.tenant} {self.graph or '*'}"
