"""A fault of the database (``durable.db.is_fault``) that a request met before it was
answered: noted on the request where the error is caught (the API's exception handler,
the console's error pages, Django's own handler for a middleware's error), so that the
project's middleware can try a read again on a fresh connection, once, or answer the
request 503 with ``Retry-After``: never as a 500 of the server's code.

A write is not tried again: its transaction, if it did not commit, was rolled back by
the fault (nothing of it stays), but a fault after the commit cannot be told apart from
one before it, so the client decides (the answer says so)."""

from __future__ import annotations

from django.http import HttpRequest

from durable.db import is_fault

# How long (seconds) a client is asked to wait before sending a write again: the time a
# restarted server or a failover takes to accept connections again is longer, and a
# client that waits this long and tries again meets either a database back or another 503.
RETRY_AFTER_SECONDS = 1

_ATTRIBUTE = "_durable_database_fault"


def note(request: HttpRequest | None, exc: BaseException) -> bool:
    """Note ``exc`` on ``request`` if it is a fault of the database; returns whether it
    is."""
    if request is None or not is_fault(exc):
        return False
    setattr(request, _ATTRIBUTE, exc)
    return True


def noted(request: HttpRequest) -> BaseException | None:
    """The fault ``note`` noted on ``request`` (the last one), or ``None``."""
    return getattr(request, _ATTRIBUTE, None)


def forget(request: HttpRequest) -> None:
    """Before the request is tried again: no fault noted."""
    if hasattr(request, _ATTRIBUTE):
        delattr(request, _ATTRIBUTE)


def describe(exc: BaseException) -> str:
    """What a client is told of fault ``exc``: the driver's error class and, for an error
    the server sent, its SQLSTATE and first line (a client-side error's text names the
    server's address, which is not the client's business), and what to do."""
    cause = exc
    while cause.__cause__ is not None:
        cause = cause.__cause__
    name = type(cause).__name__
    if state := getattr(cause, "sqlstate", None):
        name += f", SQLSTATE {state}: " + next(iter(str(cause).strip().splitlines()), "")
    return (
        f"The database is unavailable ({name}). The request may not have been carried"
        " out; what it had not committed was undone. Send it again after"
        f" {RETRY_AFTER_SECONDS} s (Retry-After)."
    )
