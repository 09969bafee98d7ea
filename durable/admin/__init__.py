"""The Django admin: a page for every model (``tenants``, ``threads``, ``storage``: one
module per model group, registered when Django's autodiscovery imports this package),
rows scoped to the tenants a staff user manages (``scoping``), and retention's actions
behind a confirmation page (``actions``).

Checkpoints, blobs, writes, store items, runs and their events are read-only here: they
change through ``DjangoSaver``, ``DjangoStore`` and ``durable.engine``. Threads are
deleted and pruned only through ``durable.retention`` (so through the saver: no
checkpoint, blob or write is left behind): the actions **Delete threads**, **Prune to
latest** (threads) and **Apply retention now** (retention policies, tenants) first show
what each thread would lose (checkpoints, blobs, writes); its POST with ``confirm=yes``
acts, and every thread pruned or deleted writes an ``AuditEvent`` with the admin user as
actor. Celery beat's schedule rows are not shown (``beat``): they follow the crons.
Fault drill reports are read-only, with a **Run fault drills** button (``drills``).
"""

from durable.admin import beat, drills, storage, tenants, threads
from durable.admin.actions import CONFIRM_TEMPLATE, AppliesRetention, confirm_retention
from durable.admin.scoping import (
    ByCheckpointThread,
    ByNamespace,
    ReadOnly,
    TenantScoped,
    managed_tenants,
    visible_tenants,
)

__all__ = [
    "CONFIRM_TEMPLATE",
    "AppliesRetention",
    "ByCheckpointThread",
    "ByNamespace",
    "ReadOnly",
    "TenantScoped",
    "beat",
    "confirm_retention",
    "drills",
    "managed_tenants",
    "storage",
    "tenants",
    "threads",
    "visible_tenants",
]
