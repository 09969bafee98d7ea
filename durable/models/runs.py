"""``Thread`` and ``Run``: the console's own index of what it started, and the events
of each run."""

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any, TypeVar

import psycopg
from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, models, transaction
from django.db.models import Max, Subquery, Value
from django.db.models.functions import Coalesce, Greatest

from durable.models.assistants import Assistant
from durable.models.checkpoints import THREAD_ID_MAX_LENGTH
from durable.models.tenancy import Tenant, TenantQuerySet
from durable.models.versions import GraphVersion


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
    objects = TenantQuerySet.as_manager()
    thread_id = models.CharField(max_length=THREAD_ID_MAX_LENGTH, unique=True)
    name = models.CharField(max_length=THREAD_ID_MAX_LENGTH)
    graph = models.CharField(max_length=100)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.IDLE)
    # The version of the graph its newest run ran (``durable.engine.versions``).
    graph_version = models.ForeignKey(
        GraphVersion, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
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


class RunQuerySet(TenantQuerySet):
    tenant_path = "thread__tenant"


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

    # When a run is due: its request, or its ``after_seconds`` delay's end when later.
    # Queue wait counts from here, in /metrics and on the Operations page alike: a delay
    # the caller asked for is not a wait for a worker. (Coalesce, since SQLite's MAX()
    # is NULL when any argument is.)
    DUE_AT = Greatest("created_at", Coalesce("not_before", "created_at"))

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="runs")
    objects = RunQuerySet.as_manager()
    graph = models.CharField(max_length=100)
    # The stored assistant the run was asked on, and which of its versions gave it its
    # config and context; none for a run on a graph's own default assistant (or once the
    # assistant is deleted: the run keeps its own config).
    assistant = models.ForeignKey(
        Assistant, on_delete=models.SET_NULL, null=True, blank=True, related_name="runs"
    )
    assistant_version = models.PositiveIntegerField(null=True, blank=True)
    # The version of the graph the worker ran it with (``durable.engine.versions``).
    graph_version = models.ForeignKey(
        GraphVersion, on_delete=models.SET_NULL, null=True, blank=True, related_name="runs"
    )
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True
    )
    input = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    command = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    # Whether ``command["resume"]`` maps interrupt ids to answers, as the request said
    # (``durable.engine.requests``): the worker re-keys such answers on a copied checkpoint.
    resume_by_id = models.BooleanField(default=False)
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
    # The cron whose fire started it (``durable.engine.crons``); a run outlives its cron.
    cron = models.ForeignKey(
        "durable.Cron", on_delete=models.SET_NULL, null=True, blank=True, related_name="runs"
    )
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
            # The Operations page's windows and the run lists read runs by creation time;
            # without it each window scans every run ever kept.
            models.Index(fields=["created_at"], name="run_created"),
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
    def assistant_pk(self) -> int | None:
        """The primary key of the run's Assistant row (Django's ``assistant_id``); the
        assistant's own id, as the API names it, is ``assistant.assistant_id``."""
        return self.assistant_id

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
