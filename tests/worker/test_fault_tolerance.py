"""Fault tolerance made visible (examples/fault_tolerance.py), run by the real worker:
retry attempts, a node timeout and the error handler's route appear as RunEvents."""

from __future__ import annotations

import pytest

from durable import engine
from durable.models import Run, RunEvent, Thread
from examples.fault_tolerance import FAILING_ATTEMPTS
from tests.helpers.runs import finished

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def events(run: Run, kind: str) -> list[dict]:
    return [e.data for e in RunEvent.objects.filter(run=run, event=kind).order_by("seq")]


def finished_tasks(run: Run) -> list[tuple[str, str | None]]:
    """(node, error) of each task result, in the order they were streamed."""
    return [
        (task["name"], task["error"])
        for task in events(run, "tasks")
        if "result" in task  # a task's start has "input"; its end has "result"
    ]


def log_of(run: Run) -> list[str]:
    return engine.thread_state(Thread.objects.get(pk=run.thread_pk)).values["log"]


def test_retries_timeout_and_compensation_are_events(worker):
    run = finished(engine.start("fault_tolerance", {"order": "A-1", "supplier_delay": 5.0}))
    assert run.status == Run.Status.SUCCESS, run.error_message
    attempts = [e for e in events(run, "custom") if e.get("node") == "reserve_stock"]
    assert [(e["attempt"], e["failed"]) for e in attempts] == [
        (n, n <= FAILING_ATTEMPTS) for n in range(1, FAILING_ATTEMPTS + 2)
    ]
    tasks = finished_tasks(run)
    assert [name for name, _ in tasks] == [
        "reserve_stock",
        "quote_shipping",
        "__error_handler__quote_shipping",
        "notify",
    ]
    timeout = dict(tasks)["quote_shipping"]
    assert "NodeTimeoutError" in timeout and "run timeout" in timeout
    assert log_of(run) == [
        f"stock reserved on attempt {FAILING_ATTEMPTS + 1}",
        "stock released: quote_shipping failed (NodeTimeoutError)",
        "customer notified: order cancelled",
    ]


def test_without_a_timeout_the_handler_stays_out(worker):
    run = finished(engine.start("fault_tolerance", {"order": "A-2", "supplier_delay": 0}))
    assert run.status == Run.Status.SUCCESS, run.error_message
    assert [name for name, _ in finished_tasks(run)] == [
        "reserve_stock",
        "quote_shipping",
        "notify",
    ]
    assert all(error is None for _, error in finished_tasks(run))
    assert log_of(run)[-1] == "customer notified: order confirmed"
