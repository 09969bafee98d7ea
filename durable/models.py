"""Tables behind LangGraph's checkpointer and the console's threads and runs.

The four checkpoint tables follow LangGraph's PostgresSaver layout
(``langgraph/checkpoint/postgres/base.py``, ``MIGRATIONS``): a checkpoint row per
(thread_id, checkpoint_ns, checkpoint_id), one blob row per channel *version*, and the
pending writes of each checkpoint. They hold plain thread ids, not foreign keys: any
LangGraph graph may use ``DjangoSaver`` with any thread id, whether or not the console
knows the thread. ``Thread`` and ``Run`` are the console's own index of what it started.
"""

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from durable.metadata import SortedKeysJSONEncoder

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
    # Sorted keys let SQLite compare nested values as text (durable.metadata).
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


class Thread(models.Model):
    """A thread the console knows: the graph it runs and where it stands.

    The tenant arrives with multi-tenancy (issue 5): a ``tenant`` foreign key goes here,
    and uniqueness becomes (tenant, thread_id).
    """

    class Status(models.TextChoices):
        IDLE = "idle"
        BUSY = "busy"
        INTERRUPTED = "interrupted"
        ERROR = "error"

    thread_id = models.CharField(max_length=THREAD_ID_MAX_LENGTH, unique=True)
    graph = models.CharField(max_length=100)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.IDLE)
    metadata = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, db_index=True)

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self):
        return self.thread_id


class Run(models.Model):
    """One execution of a thread's graph by a worker.

    ``input`` is the graph input for a ``start`` run; ``command`` is the ``Command``
    arguments (``{"resume": ...}``) for a ``resume`` run. ``interrupts`` holds the
    ``[{"id", "value"}]`` pending when the run stopped ``interrupted``.
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        SUCCESS = "success"
        ERROR = "error"
        INTERRUPTED = "interrupted"

    class Kind(models.TextChoices):
        START = "start"
        RESUME = "resume"

    ACTIVE = (Status.PENDING, Status.RUNNING)

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="runs")
    graph = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True
    )
    input = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    command = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    interrupts = models.JSONField(default=list, blank=True, encoder=DjangoJSONEncoder)
    error_type = models.CharField(max_length=200, blank=True, default="")
    error_message = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"run {self.pk} ({self.kind}, {self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE


class StoreItem(models.Model):
    """One item of LangGraph's long-term memory store (``durable.store.DjangoStore``).

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
