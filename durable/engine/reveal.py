"""Revealing one masked value of a checkpoint's state, for one request, audited.

The console masks sensitive values everywhere (``durable.redaction``); an admin or an
auditor (``durable.tenancy.may_reveal``, which the surface checks) may ask for one of
them. Each reveal is an ``AuditEvent`` (``reveal``) naming the path and the checkpoint.
"""

from __future__ import annotations

from typing import Any

from durable import audit
from durable.engine.checks import InvalidRequest
from durable.engine.state import state_at
from durable.models import Thread
from durable.redaction import masked_paths, value_at


def reveal(
    thread: Thread, checkpoint_id: str, path: str, *, checkpoint_ns: str = "", requested_by: Any
) -> Any:
    """The value at dotted ``path`` (as ``durable.redaction.masked_paths`` names it) of
    the state at ``checkpoint_id`` in ``checkpoint_ns``, JSON-safe, and one ``reveal``
    event on the audit trail. Raises ``InvalidRequest("checkpoint_id")`` for a
    checkpoint the thread does not have, ``InvalidRequest("path")`` for a path that is
    not a masked value there (nothing is recorded then)."""
    snapshot = state_at(thread, checkpoint_id, checkpoint_ns=checkpoint_ns)
    if path not in masked_paths(snapshot.values):
        raise InvalidRequest("path", f"{path!r} is not a masked value of this checkpoint.")
    value = value_at(snapshot.values, path)
    audit.record(
        audit.Action.REVEAL,
        actor=requested_by,
        thread=thread,
        checkpoint_id=checkpoint_id,
        detail={"path": path, "checkpoint_ns": checkpoint_ns},
    )
    return value
