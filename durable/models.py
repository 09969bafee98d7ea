"""Tables behind LangGraph's checkpointer and the console's threads and runs.

The four checkpoint tables follow LangGraph's PostgresSaver layout
(``langgraph/checkpoint/postgres/base.py``, ``MIGRATIONS``): a checkpoint row per
(thread_id, checkpoint_ns, checkpoint_id), one blob row per channel *version*, and the
pending writes of each checkpoint. They hold plain thread ids, not foreign keys: any
LangGraph graph may use ``DjangoSaver`` with any thread id, whether or not the console
knows the thread. ``Thread`` and ``Run`` are the console's own index of what it started.
"""

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any, TypeVar

import psycopg
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, models, transaction
from django.db.models import Max, Subquery, Value
from django.db.models.functions import Coalesce

from durable.persistence.metadata import SortedKeysJSONEncoder

THREAD_ID_MAX_LENGTH = 255


class Checkpoint(models.Model):
    """One super-step boundary of one thread in one namespace.

    ``checkpoint`` is LangGraph's ``Checkpoint`` dict serialized by the saver's ``serde``
    (``type`` is the serializer's type tag), without the channel values that live in
    ``CheckpointBlob`` and without ``channel_versions``, which has its own column.
    ``metadata`` stays plain JSON so it can be filtered.
    """

    thread_id = models.CharField(max_length=THREAD_ID_MAX_LENGTH)
    checkpoint_ns = models.TextField(blank=True, default="")
    checkpoint_id = models.CharField(max_length=64)
    parent_checkpoint_id = models.CharField(max_length=64, null=True, blank=True)
    type = models.CharField(max_length=32)
    checkpoint = models.BinaryField()
    # Kept out of the serialized payload so that pruning and DeltaChannel history can
    # tell which blobs a checkpoint uses without decoding (or decrypting) it.
    channel_versions = models.JSONField(default=dict)
    # Sorted keys let SQLite compare nested values as text (durable.persistence.metadata).
    metadata = models.JSONField(default=dict, encoder=SortedKeysJSONEncoder)

    class Meta:
        constraints = [
            # Serves both "by id" and "latest of a thread/namespace" (a backward scan of
            # the (thread_id, checkpoint_ns) prefix): uuid6 ids sort by time.
            models.UniqueConstraint(
                fields=["thread_id", "checkpoint_ns", "checkpoint_id"],
                name="checkpoint_pk",
            )
        ]

    def __str__(self):
        return f"{self.thread_id} {self.checkpoint_ns!r} {self.checkpoint_id}"


class CheckpointBlob(models.Model):
    """The value of one channel at one version. Written once, shared by every
    checkpoint whose ``channel_versions`` names that version."""

    thread_id = models.CharField(max_length=THREAD_ID_MAX_LENGTH)
    checkpoint_ns = models.TextField(blank=True, default="")
    channel = models.TextField()
    version = models.CharField(max_length=64)
    type = models.CharField(max_length=32)
    blob = models.BinaryField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["thread_id", "checkpoint_ns", "channel", "version"],
                name="checkpoint_blob_pk",
            )
        ]


class CheckpointWrite(models.Model):
    """A pending write of one task, saved against the checkpoint it ran from.

    ``idx`` is the write's position in the task's writes, or a negative number from
    ``WRITES_IDX_MAP`` for special channels (``__error__``, ``__interrupt__``, ...).
    """

    thread_id = models.CharField(max_length=THREAD_ID_MAX_LENGTH)
    checkpoint_ns = models.TextField(blank=True, default="")
    checkpoint_id = models.CharField(max_length=64)
    task_id = models.CharField(max_length=64)
    idx = models.IntegerField()
    task_path = models.TextField(blank=True, default="")
    channel = models.TextField()
    type = models.CharField(max_length=32, null=True)
    blob = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"],
                name="checkpoint_write_pk",
            )
        ]


class Tenant(models.Model):
    """Who a thread belongs to. ``slug`` is the tenant's id where one is shown or stored
    (API tokens, store namespaces): it never changes once created."""

    DEFAULT_SLUG = "default"

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]
        # A staff auditor: reads every tenant's threads and audit trail, changes nothing.
        permissions = [("audit_all_tenants", "Can read every tenant's threads and audit trail")]

    def __str__(self):
        return self.slug

    @classmethod
    def default(cls) -> "Tenant":
        """The tenant of threads created without one (scripts, the embedded demo); made
        by migration 0010, which moved every earlier thread into it."""
        tenant, _ = cls.objects.get_or_create(slug=cls.DEFAULT_SLUG, defaults={"name": "Default"})
        return tenant


class Role(models.TextChoices):
    """What a member (or an API token) may do in its tenant: a viewer reads; an
    operator also resumes, forks, replays, cancels and deletes; an admin also manages
    the tenant's tokens and retention."""

    VIEWER = "viewer"
    OPERATOR = "operator"
    ADMIN = "admin"


class Membership(models.Model):
    """``user`` belongs to ``tenant`` with ``role``."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "tenant"], name="membership_once_per_tenant")
        ]

    def __str__(self):
        return f"{self.user} in {self.tenant} ({self.role})"


class Thread(models.Model):
    """A thread the console knows: its tenant, the graph it runs and where it stands.

    ``thread_id`` is the id the checkpointer files its checkpoints under (LangGraph's
    ``configurable.thread_id``), unique across tenants. ``name`` is the id the tenant
    knows the thread by, in the console and the API, unique within the tenant: the same
    as ``thread_id`` for a thread created without one, else the id its creator supplied
    (then ``thread_id`` is a fresh UUID), so that two tenants may use the same id
    without seeing each other.
    """

    class Status(models.TextChoices):
        IDLE = "idle"
        BUSY = "busy"
        INTERRUPTED = "interrupted"
        ERROR = "error"

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="threads")
    thread_id = models.CharField(max_length=THREAD_ID_MAX_LENGTH, unique=True)
    name = models.CharField(max_length=THREAD_ID_MAX_LENGTH)
    graph = models.CharField(max_length=100)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.IDLE)
    metadata = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, db_index=True)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="thread_name_per_tenant")
        ]

    def __str__(self):
        return self.name


class Run(models.Model):
    """One execution of a thread's graph by a worker: ``pending → running → success |
    error | interrupted | cancelled | timeout`` (``durable.engine.policy`` and
    ``durable.engine.execution`` move it along).

    What it runs, by ``kind``: ``start`` streams ``input``; ``resume`` streams
    LangGraph's ``Command`` from ``command`` (``resume``, ``goto``, ``update``); ``fork``
    and ``replay`` stream ``None``
    from ``checkpoint_id``. ``checkpoint_id`` is the checkpoint the run started from
    (for start and resume, the thread's latest when a worker first took it);
    ``forked_from`` is the checkpoint a fork (or an answer given again) branched off.
    ``command`` of a fork records its update: ``{"update": values, "as_node": name}``.
    ``interrupts`` holds the ``[{"id", "value"}]`` pending when the run stopped
    ``interrupted``; ``error_type``, ``error_message`` and ``error_node`` describe an
    ``error``.

    Execution (``durable.engine.execution``): a worker claims the run by raising ``attempt``
    and holding a lease (``worker``, ``lease_expires_at``) that it renews while it runs;
    every write of that worker is fenced by ``attempt``, so a worker that lost its
    lease can no longer change the row. ``stop_requested`` asks the worker to drain
    (stop at the next super-step boundary): for a cancel, a newer run's ``interrupt`` or
    ``rollback`` strategy, a ``timeout``, or the worker's own ``shutdown``;
    ``stop_detail`` says, in words, why the run stopped.
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        SUCCESS = "success"
        ERROR = "error"
        INTERRUPTED = "interrupted"
        CANCELLED = "cancelled"
        TIMEOUT = "timeout"

    class Kind(models.TextChoices):
        START = "start"
        RESUME = "resume"
        FORK = "fork"
        REPLAY = "replay"

    class Durability(models.TextChoices):
        """LangGraph's ``durability`` argument of ``stream`` (``langgraph/types.py``,
        ``Durability``): when a super-step's checkpoint is saved."""

        SYNC = "sync"
        ASYNC = "async"
        EXIT = "exit"

    class MultitaskStrategy(models.TextChoices):
        """What a new run does to a thread's active run, as LangGraph's Agent Server
        names it (``multitask_strategy``)."""

        REJECT = "reject"
        ENQUEUE = "enqueue"
        INTERRUPT = "interrupt"
        ROLLBACK = "rollback"

    class Stop(models.TextChoices):
        """Why a worker was asked to drain the run."""

        NONE = "", "not requested"
        CANCEL = "cancel"
        INTERRUPT = "interrupt"
        ROLLBACK = "rollback"
        TIMEOUT = "timeout"
        SHUTDOWN = "shutdown"

    ACTIVE = (Status.PENDING, Status.RUNNING)
    FINAL = (
        Status.SUCCESS,
        Status.ERROR,
        Status.INTERRUPTED,
        Status.CANCELLED,
        Status.TIMEOUT,
    )

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="runs")
    graph = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True
    )
    input = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    command = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    metadata = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)
    checkpoint_id = models.CharField(max_length=64, blank=True, default="")
    forked_from = models.CharField(max_length=64, blank=True, default="")
    durability = models.CharField(
        max_length=8, choices=Durability.choices, default=Durability.ASYNC
    )
    multitask_strategy = models.CharField(
        max_length=16, choices=MultitaskStrategy.choices, default=MultitaskStrategy.REJECT
    )
    # Who asked: a user name, an API client, or a process ("reaper"). Text rather than a
    # foreign key, so the record outlives the account and names callers that are not users.
    requested_by = models.CharField(max_length=150, blank=True, default="")
    timeout_seconds = models.FloatField(null=True, blank=True)
    # What the caller asked of the run beyond its input, in the Agent Server's terms: the
    # stream modes its clients follow (recorded from the start, so a join or a reconnect
    # replays them), the graph's config (``configurable`` keys, ``recursion_limit``,
    # ``tags``) and runtime ``context``, LangGraph's breakpoints, when it may start, where
    # its outcome is posted, and whether a stateless run's thread outlives it.
    stream_modes = models.JSONField(default=list, blank=True)
    config = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)
    context = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    interrupt_before = models.JSONField(null=True, blank=True)
    interrupt_after = models.JSONField(null=True, blank=True)
    not_before = models.DateTimeField(null=True, blank=True)
    webhook = models.TextField(blank=True, default="")
    on_completion = models.CharField(max_length=8, blank=True, default="")
    interrupts = models.JSONField(default=list, blank=True, encoder=DjangoJSONEncoder)
    error_type = models.CharField(max_length=200, blank=True, default="")
    error_message = models.TextField(blank=True, default="")
    error_node = models.CharField(max_length=200, blank=True, default="")
    stop_requested = models.CharField(
        max_length=16, choices=Stop.choices, blank=True, default=Stop.NONE
    )
    stop_requested_at = models.DateTimeField(null=True, blank=True)
    stop_detail = models.TextField(blank=True, default="")
    # The lease: which worker runs it, until when, and how many times it was claimed.
    attempt = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=200, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    task_id = models.CharField(max_length=64, blank=True, default="")
    dispatched_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # One running run per thread, whatever races the claims run into.
            models.UniqueConstraint(
                fields=["thread"],
                condition=models.Q(status="running"),
                name="run_one_running_per_thread",
            ),
        ]
        indexes = [
            models.Index(fields=["thread", "status"], name="run_thread_status"),
            # The reaper's scan: running runs by lease expiry.
            models.Index(
                fields=["lease_expires_at"],
                name="run_running_lease",
                condition=models.Q(status="running"),
            ),
        ]

    def __str__(self):
        return f"run {self.pk} ({self.kind}, {self.status})"

    @property
    def thread_pk(self) -> int:
        """The primary key of the run's Thread row. Django names the column ``thread_id``;
        in this project ``thread_id`` means LangGraph's ``configurable.thread_id``."""
        return self.thread_id

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    def highest_seq(self) -> int:
        """The ``seq`` of the run's latest event so far (0 before its first): where a
        follower that has shown everything resumes (``RunEvent.objects.highest_seq``)."""
        return RunEvent.objects.highest_seq(self.pk)


# How a run's events are numbered: ``seq`` is the run's highest + 1 (+ 2, ... for a batch),
# computed where the events are written. The web process (a cancel's event) and the worker
# may both write a running run's events; the unique constraint refuses the writer that
# lost a race to the same ``seq``, which tries again (``numbered``). The ORM paths are the
# manager's; ``durable.engine.records`` writes batches by the same rule, in one SQL
# statement on PostgreSQL.
SEQ_ATTEMPTS = 5
T = TypeVar("T")


def numbered(write: Callable[..., T], *args) -> T:
    """``write(*args)``, which writes events numbered after the run's highest ``seq``,
    made again while the unique constraint refuses it (it lost a race to the same
    ``seq``), up to ``SEQ_ATTEMPTS`` times in all; then the error propagates. A refused
    ``write`` must leave the database as it found it (its own transaction or savepoint).
    Returns what ``write`` returns."""
    for attempt in range(SEQ_ATTEMPTS):
        try:
            return write(*args)
        except (IntegrityError, psycopg.errors.UniqueViolation):
            if attempt == SEQ_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


class RunEventManager(models.Manager):
    def highest_seq(self, run_id: int) -> int:
        """The run's highest ``seq`` so far (0 before its first event)."""
        return self.filter(run_id=run_id).aggregate(seq=Max("seq"))["seq"] or 0

    def append(self, run_id: int, event: str, data: Any = None, ns: str = "") -> None:
        """Write the run's next event, its ``seq`` computed by the INSERT itself, in one
        statement (``numbered``). ``data`` must be JSON-safe
        (``durable.values.jsonable``)."""
        latest = (
            self.filter(run_id=run_id)
            .order_by()
            .values("run_id")
            .annotate(m=Max("seq"))
            .values("m")
        )

        def create() -> None:
            # A refused INSERT inside a transaction must not break the caller's.
            guard = transaction.atomic() if transaction.get_connection().in_atomic_block else None
            with guard or nullcontext():
                self.create(
                    run_id=run_id,
                    seq=Coalesce(Subquery(latest), Value(0)) + 1,
                    event=event,
                    ns=ns,
                    data=data,
                )

        numbered(create)


class RunEvent(models.Model):
    """One event of a run, numbered by ``seq`` (1, 2, ... per run, in the order written).

    ``event`` is a LangGraph stream mode (``updates``, ``custom``, ``tasks``) with the
    chunk as ``data`` (made JSON-safe by ``durable.values.jsonable``) and the subgraph
    it came from as ``ns`` (``"node:task_id"`` parts joined by ``|``, ``""`` for the
    graph itself); or ``lifecycle``, whose ``data`` holds the run's new ``status`` and
    what happened (claimed by a worker, drained, re-enqueued, finished).
    """

    LIFECYCLE = "lifecycle"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    event = models.CharField(max_length=32)
    ns = models.TextField(blank=True, default="")
    data = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = RunEventManager()

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="run_event_seq")]

    def __str__(self):
        return f"run {self.run_id} event {self.seq} ({self.event})"


class StoreItem(models.Model):
    """One item of LangGraph's long-term memory store (``durable.persistence.store.DjangoStore``).

    Laid out like LangGraph's PostgresStore ``store`` table
    (``langgraph/store/postgres/base.py``): ``namespace`` is the namespace's labels joined
    with ``"."`` (LangGraph forbids ``"."`` in a label), unique with ``key``.

    ``value`` is the item's JSON, so search filters run in SQL. When the store's serde
    encrypts, ``value`` and ``vectors`` stay NULL and both live, serialized and encrypted,
    in ``blob`` (``type`` is the serializer's type tag). ``vectors`` holds one embedding per
    indexed text. ``ttl_minutes`` is the item's time to live; ``expires_at`` moves to
    now + ``ttl_minutes`` on writes and refreshing reads.
    """

    namespace = models.TextField()
    key = models.TextField()
    value = models.JSONField(null=True, encoder=SortedKeysJSONEncoder)
    type = models.CharField(max_length=32, blank=True, default="")
    blob = models.BinaryField(null=True)
    vectors = models.JSONField(null=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    expires_at = models.DateTimeField(null=True)
    ttl_minutes = models.FloatField(null=True)

    class Meta:
        constraints = [
            # Also serves namespace-prefix search (an anchored LIKE on its first column):
            # on PostgreSQL only a text_pattern_ops index can, unless the collation is C,
            # as PostgresStore's store_prefix_idx (langgraph/store/postgres/base.py).
            models.UniqueConstraint(
                fields=["namespace", "key"],
                name="store_item_pk",
                opclasses=["text_pattern_ops", "text_pattern_ops"],
            )
        ]
        indexes = [
            models.Index(
                fields=["expires_at"],
                name="store_item_expires_at",
                condition=models.Q(expires_at__isnull=False),
            ),
        ]
        # On PostgreSQL, migration 0007 adds store_item_dotted_namespace, on
        # (namespace || '.') text_pattern_ops: prefix search reads it instead of this
        # unique index (a fraction of the pages), and a get cannot pick it.

    def __str__(self):
        return f"{self.namespace} {self.key}"


class ApiToken(models.Model):
    """A tenant's API key, sent as the ``x-api-key`` header (what ``langgraph-sdk``
    sends for ``api_key=``). Only its SHA-256 ``digest`` is stored: the token is a
    random 256-bit secret, shown once when created (``durable.tenancy.create_token``),
    so a fast hash is enough and a leaked table reveals no usable key."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.OPERATOR)
    digest = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=12, editable=False, help_text="To recognise it.")
    created_by = models.CharField(max_length=150, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    def __str__(self):
        return f"{self.tenant}: {self.name} ({self.prefix}…)"


class AuditEventQuerySet(models.QuerySet):
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
        RETENTION_CHANGE = "retention_change"
        TOKEN_CREATE = "token_create"
        TOKEN_REVOKE = "token_revoke"
        LOGIN = "login"

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
