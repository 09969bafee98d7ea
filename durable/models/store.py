"""The rows behind ``DjangoStore``."""

from django.db import models

from durable.persistence.metadata import SortedKeysJSONEncoder


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
