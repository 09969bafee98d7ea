"""What a log line is about, and the two forms lines take (``DURABLE_LOG_FORMAT``).

``bound(**fields)`` sets context fields (``FIELDS``: ``run_id``, ``thread_id`` the
thread's name as its tenant knows it, ``tenant`` the tenant's slug, ``graph``,
``attempt``) for the records logged inside it, in this thread and in what it starts
with a copy of its context (LangGraph's executor threads, asyncio tasks, asgiref's
threads); the run engine binds them around a run. ``ContextFilter``, a handler's
filter, stamps each record with them, and with ``node``, the node LangGraph is running
when the record is logged from inside one (its config's ``langgraph_node``).

``formatter(kind)`` gives the handler's formatter: ``"json"``, one JSON object a line
(``JsonFormatter``: ``timestamp`` ISO 8601 UTC, ``level``, ``logger``, ``message``, the
context fields that apply, ``exc_info``; any ``extra`` field too, sensitive values
masked by ``durable.redaction``), or ``"text"``, a plain line ending in the context
fields as ``[run_id=42 graph=...]`` (``TextFormatter``). ``query(run_id, kind)`` is the
shell filter that finds a run's lines in a log of that form.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from langchain_core.runnables.config import var_child_runnable_config
from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter as _JsonFormatter

from durable.redaction import redact, redact_text

FIELDS = ("run_id", "thread_id", "tenant", "graph", "node", "attempt")
KINDS = ("json", "text")

_fields: ContextVar[dict[str, Any] | None] = ContextVar("durable_log_fields", default=None)


@contextlib.contextmanager
def bound(**fields: Any) -> Iterator[None]:
    """Add ``fields`` (``None`` values left out) to the context of the records logged
    inside the block; the outer fields come back after it."""
    outer = _fields.get() or {}
    token = _fields.set({**outer, **{k: v for k, v in fields.items() if v is not None}})
    try:
        yield
    finally:
        _fields.reset(token)


def current() -> dict[str, Any]:
    """The context fields that apply here: the bound ones and the running node's."""
    found = dict(_fields.get() or {})
    config = var_child_runnable_config.get() or {}
    node = (config.get("metadata") or {}).get("langgraph_node")
    if node:
        found["node"] = node
    return found


class ContextFilter(logging.Filter):
    """Stamps a record with ``current()``'s fields (a field the record already has, as
    an ``extra``, stays as it was)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in current().items():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True


class ClientErrorFilter(logging.Filter):
    """Drops the traceback of a ``django.request`` line about a 4xx answer: Django logs a
    refusal it raised as an exception (a viewer's ``PermissionDenied``, a 403; a
    ``SuspiciousOperation``, a 400) with its traceback, which reads as a server fault.
    The line itself stays; a 5xx keeps its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if record.name == "django.request" and isinstance(status, int) and status < 500:
            record.exc_info = None
            record.exc_text = None
        return True


class JsonFormatter(_JsonFormatter):
    """python-json-logger's formatter with our field names, the whole object masked
    (``redact``: an ``extra`` under a sensitive name too), its traceback masked as text
    (``redact_text``), its message by ``RedactingFilter`` on the same handler."""

    def __init__(self) -> None:
        super().__init__(
            ["levelname", "name", "message"],
            rename_fields={"levelname": "level", "name": "logger"},
            timestamp=True,
            # uvicorn's copy of its message with terminal colour codes.
            reserved_attrs=[*RESERVED_ATTRS, "color_message"],
        )

    def formatException(self, ei) -> str:
        # Formatted anew from the record's exc_info, not from the exc_text the filter masked.
        return redact_text(super().formatException(ei))

    def formatStack(self, stack_info) -> str:
        return redact_text(super().formatStack(stack_info))

    def process_log_record(self, log_data: dict) -> dict:
        masked = redact(log_data)
        return {"timestamp": masked.pop("timestamp"), **masked}


class TextFormatter(logging.Formatter):
    """A line as Celery writes its own, then the context fields in brackets."""

    def __init__(self) -> None:
        super().__init__("[%(asctime)s: %(levelname)s/%(processName)s] %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        context = " ".join(f"{k}={getattr(record, k)}" for k in FIELDS if hasattr(record, k))
        return f"{line} [{context}]" if context else line


def formatter(kind: str = "json") -> logging.Formatter:
    """The formatter for ``kind`` (``KINDS``); ``ValueError`` for another."""
    if kind == "json":
        return JsonFormatter()
    if kind == "text":
        return TextFormatter()
    raise ValueError(f"DURABLE_LOG_FORMAT must be one of {', '.join(KINDS)}, not {kind!r}")


def install(logger: logging.Logger, kind: str) -> None:
    """Give each of ``logger``'s handlers ``formatter(kind)`` and a ``ContextFilter``
    (once), as ``settings.LOGGING`` sets up the web process's console handler."""
    for handler in logger.handlers:
        handler.setFormatter(formatter(kind))
        if not any(isinstance(f, ContextFilter) for f in handler.filters):
            handler.addFilter(ContextFilter())


def query(run_id: int, kind: str) -> str:
    """The command that keeps run ``run_id``'s lines of a log in form ``kind`` (read on
    its standard input): jq for JSON (lines that are not JSON, like Celery's banner,
    skipped), grep for text."""
    if kind == "json":
        return f"jq -cR 'fromjson? | select(.run_id == {int(run_id)})'"
    return f"grep -w 'run_id={int(run_id)}'"


__all__ = [
    "FIELDS",
    "KINDS",
    "bound",
    "current",
    "ContextFilter",
    "JsonFormatter",
    "TextFormatter",
    "formatter",
    "install",
    "query",
]
