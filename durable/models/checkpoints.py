"""The four checkpoint tables behind ``DjangoSaver``.

They follow LangGraph's PostgresSaver layout
(``langgraph/checkpoint/postgres/base.py``, ``MIGRATIONS``): a checkpoint row per
(thread_id, checkpoint_ns, checkpoint_id), one blob row per channel *version*, and the
pending writes of each checkpoint. They hold plain thread ids, not foreign keys: any
LangGraph graph may use ``DjangoSaver`` with any thread id, whether or not the console
knows the thread."""

from django.db import models

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
