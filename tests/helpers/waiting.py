"""Waiting for what another process does: poll, with a deadline and a message."""

from __future__ import annotations

import time


def wait_for(predicate, timeout=60.0, interval=0.1, message="condition"):
    """Poll ``predicate`` until it returns a truthy value, and return that value; fail
    after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")
