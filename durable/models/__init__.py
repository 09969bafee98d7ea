"""Every table of the ``durable`` app, one module per group: the checkpoint tables
behind ``DjangoSaver`` (``checkpoints``), tenants and their tokens (``tenancy``),
threads, runs and their events (``runs``), the schedules that start runs (``crons``),
the store's items (``store``), the audit trail and retention policies (``audit``),
assistants and their versions (``assistants``), the graph versions runs ran
(``versions``), the fault drills' reports and node executions (``drills``)."""

from durable.models.assistants import NAME_MAX_LENGTH, Assistant, AssistantVersion
from durable.models.audit import AuditEvent, AuditEventQuerySet, RetentionPolicy
from durable.models.checkpoints import (
    THREAD_ID_MAX_LENGTH,
    Checkpoint,
    CheckpointBlob,
    CheckpointWrite,
)
from durable.models.crons import Cron
from durable.models.drills import DrillExecution, DrillReport
from durable.models.runs import SEQ_ATTEMPTS, Run, RunEvent, RunEventManager, Thread, numbered
from durable.models.store import StoreItem
from durable.models.tenancy import ApiToken, Membership, Role, Tenant, TenantQuerySet
from durable.models.versions import GraphVersion

__all__ = [
    "THREAD_ID_MAX_LENGTH",
    "SEQ_ATTEMPTS",
    "NAME_MAX_LENGTH",
    "ApiToken",
    "Assistant",
    "AssistantVersion",
    "AuditEvent",
    "AuditEventQuerySet",
    "Checkpoint",
    "CheckpointBlob",
    "CheckpointWrite",
    "Cron",
    "DrillExecution",
    "DrillReport",
    "GraphVersion",
    "Membership",
    "RetentionPolicy",
    "Role",
    "Run",
    "RunEvent",
    "RunEventManager",
    "StoreItem",
    "Tenant",
    "TenantQuerySet",
    "Thread",
    "numbered",
]
