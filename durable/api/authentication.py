"""Who is asking: the tenant's API token in ``x-api-key`` (``TenantToken``), whether its
role may change anything (``may_change``), and how runs and the audit trail name it
(``caller``)."""

from __future__ import annotations

import asyncio

from django.http import HttpRequest
from ninja.security import APIKeyHeader

from durable import tenancy
from durable.api.errors import ApiError
from durable.db import borrow


class TenantToken(APIKeyHeader):
    """A tenant's API token (``durable.tenancy``) in the ``x-api-key`` header, as
    ``langgraph-sdk`` sends ``api_key``. ``request.auth`` is then the ``ApiToken``:
    its tenant scopes every lookup, its role decides whether the request may change
    anything."""

    param_name = "x-api-key"
    # For an async operation, awaited on a borrowed connection (``durable.db.borrow``),
    # given back at once: a sync check would hold its request thread's connection for
    # as long as a stream of server-sent events stays open. A sync operation already
    # runs on a thread with a connection of its own, which it gives back when it
    # answers: checked there, without ninja's hop back to the event loop and the
    # borrow's hop to another thread.
    is_async = True

    def __call__(self, request):
        key = self._get_key(request)
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # a sync operation's thread
            return tenancy.authenticate(key)
        return self.authenticate(request, key)

    async def authenticate(self, request, key):
        return await borrow(tenancy.authenticate, key)


def may_change(request: HttpRequest) -> None:
    """403 for a viewer's token: it reads, it does not resume, fork, replay, cancel,
    create or delete."""
    if not tenancy.may_act(request.auth.role):
        raise ApiError(403, "This token is a viewer's: it cannot change threads or runs.")


def caller(request: HttpRequest) -> str:
    """Who asked, as runs and the audit trail record it."""
    return f"token:{request.auth.name}"
