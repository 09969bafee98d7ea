"""The audit trail: one append-only ``AuditEvent`` per operator action.

``record`` is called by the operations themselves (``durable.engine.operations``,
``durable.retention``, the token admin, the login signal), in the transaction that does
the work, so an action and its event are committed together or not at all.
"""

from __future__ import annotations

from typing import Any

from durable.engine.checks import actor as actor_name
from durable.history import newest_checkpoint_id
from durable.models import AuditEvent, Run, Tenant, Thread

Action = AuditEvent.Action


def head_checkpoint(thread: Thread) -> str:
    """The thread's newest root checkpoint id, as an event's ``before``/``after`` keeps it
    (``""`` when it has none)."""
    return newest_checkpoint_id(thread.thread_id) or ""


def record(
    action: str,
    *,
    actor: Any,
    tenant: Tenant | None = None,
    thread: Thread | None = None,
    run: Run | None = None,
    checkpoint_id: str = "",
    before: str = "",
    after: str = "",
    reason: str = "",
    detail: dict | None = None,
) -> AuditEvent:
    """Append one event. ``actor`` is a user, a string (``"token:<name>"``, ``"beat"``)
    or ``None`` (``"system"``); ``tenant`` defaults to the thread's. ``before`` and
    ``after`` are the thread's newest checkpoint before and after the action, where the
    action itself changes it (a fork, a prune); a run's own checkpoints are on the run."""
    if thread is not None and tenant is None:
        tenant = thread.tenant
    return AuditEvent.objects.create(
        tenant=tenant,
        actor=actor_name(actor) or "system",
        action=action,
        thread_id=thread.thread_id if thread else "",
        thread_name=thread.name if thread else "",
        run_id=run.pk if run else None,
        checkpoint_id=checkpoint_id or "",
        checkpoint_before=before or "",
        checkpoint_after=after or "",
        reason=reason or "",
        detail=detail or {},
    )


def record_login(sender, request, user, **kwargs) -> None:
    """``user_logged_in``: one event in each tenant the user is a member of, so that
    every tenant's trail shows who logged in to it (none for a user of no tenant)."""
    for membership in user.memberships.select_related("tenant"):
        record(Action.LOGIN, actor=user, tenant=membership.tenant)
