"""The Celery task behind the admin's "Run fault drills": drills take tens of seconds,
longer than a request should. It holds one pool slot of the worker that takes it while
the drills run on the others' (and its own remaining) slots."""

from celery import shared_task

from durable.drills.runner import run_drills
from durable.tasknames import DRILL_TASK


@shared_task(name=DRILL_TASK)
def run_drills_task(requested_by: str = "", timeout: float = 60.0) -> int:
    """Run every drill (``durable.drills.run_drills``); returns the report's id."""
    return run_drills(timeout=timeout, requested_by=requested_by).pk
