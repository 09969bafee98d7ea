"""Tenants' API tokens (made, recognised and revoked here), who may act, who may
read every tenant, and a tenant's own settings (``set_overdue_after``, audited).

A token is ``dur_`` followed by 43 URL-safe characters (32 random bytes). Only its
SHA-256 digest is stored (``ApiToken.digest``); the token itself is returned once, by
``create_token``. Clients send it as the ``x-api-key`` header, which is what
``langgraph-sdk`` sends for ``get_client(url=..., api_key=...)``.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from durable import audit
from durable.models import ApiToken, AuditEvent, Role, Tenant

PREFIX = "dur_"
# A staff user with this permission reads every tenant, in the console and the admin.
AUDITOR_PERMISSION = "durable.audit_all_tenants"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(
    tenant: Tenant, name: str, *, role: str = Role.OPERATOR, created_by: str = ""
) -> tuple[ApiToken, str]:
    """A new token of ``tenant``: returns the stored row and the token, which is not
    kept anywhere and cannot be shown again."""
    token = PREFIX + secrets.token_urlsafe(32)
    row = ApiToken.objects.create(
        tenant=tenant,
        name=name,
        role=role,
        digest=_digest(token),
        prefix=token[: len(PREFIX) + 6],
        created_by=created_by,
    )
    return row, token


def authenticate(token: str | None) -> ApiToken | None:
    """The live (not revoked) token ``token`` names, with its tenant; else ``None``.
    Marks it used at most once a minute."""
    if not token or not token.startswith(PREFIX) or len(token) > 100:
        return None
    row = (
        ApiToken.objects.select_related("tenant")
        .filter(digest=_digest(token), revoked_at=None)
        .first()
    )
    if row is not None:
        now = timezone.now()
        if row.last_used_at is None or (now - row.last_used_at).total_seconds() > 60:
            ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
    return row


def revoke(row: ApiToken) -> bool:
    """Revoke the token; False if it already was."""
    return bool(
        ApiToken.objects.filter(pk=row.pk, revoked_at=None).update(revoked_at=timezone.now())
    )


def may_act(role: str) -> bool:
    """Operators and admins resume, fork, replay, cancel and delete; viewers only read."""
    return role in (Role.OPERATOR, Role.ADMIN)


def may_reveal(role: str | None, user=None) -> bool:
    """Whether a member of role ``role`` (or ``user``, an auditor) may reveal a masked
    value (``durable.redaction``), one at a time: admins and auditors; operators and
    viewers see masks only."""
    return role == Role.ADMIN or (user is not None and is_auditor(user))


def is_auditor(user) -> bool:
    """Whether ``user`` may read every tenant's threads and audit trail (as a viewer)."""
    return user.is_active and user.has_perm(AUDITOR_PERMISSION)


def may_configure(role: str | None) -> bool:
    """Whether a member of role ``role`` may change the tenant's settings: admins only."""
    return role == Role.ADMIN


def set_overdue_after(
    tenant: Tenant, overdue_after: timedelta, *, requested_by=None, reason: str = ""
) -> bool:
    """Set how long an interrupt waits before the inbox marks it overdue; the change is
    audited (``tenant_settings``, ``detail``: ``{"overdue_after": [before, after]}`` in
    seconds) in the same transaction. Returns False, writing nothing, when it is the
    value already set. Raises ``django.core.exceptions.ValidationError`` (the model's
    bounds: at least a second, at most ``OVERDUE_AFTER_MAX``) with nothing changed."""
    with transaction.atomic():
        row = Tenant.objects.select_for_update().get(pk=tenant.pk)
        before = row.overdue_after
        row.overdue_after = overdue_after
        row.full_clean(validate_unique=False, validate_constraints=False)
        if before == overdue_after:
            return False
        row.save(update_fields=["overdue_after"])
        audit.record(
            AuditEvent.Action.TENANT_SETTINGS,
            actor=requested_by,
            tenant=row,
            reason=reason,
            detail={"overdue_after": [before.total_seconds(), overdue_after.total_seconds()]},
        )
    tenant.overdue_after = overdue_after
    return True


__all__ = [
    "AUDITOR_PERMISSION",
    "may_configure",
    "set_overdue_after",
    "create_token",
    "authenticate",
    "revoke",
    "may_act",
    "may_reveal",
    "is_auditor",
]
