"""Real terminations of the web process's own PostgreSQL backend between a request's
queries, for the fault tests (``tests/worker/test_request_faults.py``).

``TerminateAtQuery``, outermost in the test web process's ``MIDDLEWARE`` when
``DURABLE_TEST_TERMINATIONS=1`` (``tests/settings.py``), reads the request's
``X-Terminate-At-Query: N`` header: just before the Nth query of the ORM the request
makes (on any thread: the borrowed reads' too), a connection of its own runs
``pg_terminate_backend`` on the backend of the connection about to send it, and waits
until that backend is gone; the query then meets the real error PostgreSQL's clients
meet. Once per request: what the request tries again runs on undisturbed. The answer
says ``X-Queries`` (how many queries the request made, all tries counted) and
``X-Terminated`` (``1`` when a backend was terminated)."""

from __future__ import annotations

import contextvars
import threading
from dataclasses import dataclass, field

import psycopg
from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.db import connections
from django.db.backends.signals import connection_created

HEADER = "X-Terminate-At-Query"


@dataclass
class _Plan:
    at: int
    queries: int = 0
    terminated: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


_plan: contextvars.ContextVar[_Plan | None] = contextvars.ContextVar("terminations", default=None)


def _terminate(wrapper) -> None:
    """Terminate the backend of ``wrapper`` (a Django connection), from a connection of
    this module's own, and wait up to 5 s for it to be gone."""
    pid = wrapper.connection.info.backend_pid
    db = wrapper.settings_dict
    params = {"dbname": db["NAME"], "user": db["USER"], "password": db["PASSWORD"]}
    params |= {"host": db["HOST"] or "127.0.0.1", "port": db["PORT"] or 5432}
    with psycopg.connect(**params, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])


def _before_query(execute, sql, params, many, context):
    plan = _plan.get()
    if plan is not None:
        with plan.lock:
            plan.queries += 1
            now = plan.queries == plan.at and not plan.terminated
            plan.terminated |= now
        if now:
            _terminate(context["connection"])
    return execute(sql, params, many, context)


def _watch(sender, connection, **kwargs):
    if connection.vendor == "postgresql" and _before_query not in connection.execute_wrappers:
        connection.execute_wrappers.append(_before_query)


connection_created.connect(_watch, dispatch_uid="tests-terminations")
for _connection in connections.all(initialized_only=True):
    _watch(None, _connection)


class TerminateAtQuery:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.async_mode:
            return self.__acall__(request)
        plan, token = self._plan(request)
        try:
            return self._said(plan, self.get_response(request))
        finally:
            _plan.reset(token)

    async def __acall__(self, request):
        plan, token = self._plan(request)
        try:
            return self._said(plan, await self.get_response(request))
        finally:
            _plan.reset(token)

    def _plan(self, request):
        plan = _Plan(int(request.headers.get(HEADER) or 0))
        return plan, _plan.set(plan)

    def _said(self, plan: _Plan, response):
        response["X-Queries"] = str(plan.queries)
        response["X-Terminated"] = "1" if plan.terminated else "0"
        return response
