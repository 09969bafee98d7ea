"""Celery tasks. The work itself lives in ``durable.runs``."""

from celery import shared_task

from durable import runs


@shared_task(name="durable.execute_run")
def execute_run(run_id: int) -> str:
    """Execute run ``run_id`` in this worker; returns the run's final status."""
    return runs.execute(run_id)
