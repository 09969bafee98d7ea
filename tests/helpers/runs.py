"""Runs that a worker process executes, and waits on what it does with them: their end
(``finished``; ``posted_run`` for the run a console page redirects to), the probe
graph's first super-step (``probe``, ``slow_started``), a drain (``draining``), and the
events a run wrote (``events``, ``lifecycle``)."""

from __future__ import annotations

import re

from durable import engine
from durable.models import Checkpoint, CheckpointWrite, Run, RunEvent, Thread
from tests.helpers.graphs import runs_of
from tests.helpers.waiting import wait_for


def finished(run: Run, timeout: float = 60) -> Run:
    """Wait for the worker to end ``run``; return it fresh from the database."""
    return wait_for(
        lambda: (r := Run.objects.get(pk=run.pk)).status not in Run.ACTIVE and r,
        timeout=timeout,
        message=f"run {run.pk} to end",
    )


def posted_run(response) -> Run:
    """The run a 303 to its page names, once the worker has ended it."""
    assert response.status_code == 303, response.content.decode()[:2000]
    match = re.fullmatch(r"/runs/(\d+)/", response["Location"])
    return finished(Run.objects.get(pk=int(match.group(1))))


def events(run: Run) -> list[RunEvent]:
    return list(RunEvent.objects.filter(run=run).order_by("seq"))


def lifecycle(run: Run) -> list[dict]:
    return [e.data for e in events(run) if e.event == RunEvent.LIFECYCLE]


def probe(directory, **options) -> Run:
    """A probe run (``tests.helpers.graphs``): its ``slow`` node holds the first
    super-step open until ``release(directory)``."""
    return engine.start("probe", {"dir": str(directory), "log": []}, **options)


def slow_started(run: Run, directory) -> None:
    """Wait until the probe's first super-step is under way: ``slow`` has started and
    ``fast``'s write is saved as a pending write of a checkpoint that is saved too.
    Under the runs' default ``async`` durability LangGraph saves a task's writes and the
    checkpoint they belong to on different threads (``langgraph/pregel/_loop.py``:
    ``put_writes`` does not wait for ``_checkpointer_put_after_previous``), so a write can
    be saved before its checkpoint; until that checkpoint is, a crash loses the step,
    and ``fast`` runs again, as LangGraph's async durability allows."""
    thread_id = Thread.objects.get(pk=run.thread_pk).thread_id
    writes = CheckpointWrite.objects.filter(thread_id=thread_id, checkpoint_ns="", channel="log")
    wait_for(
        lambda: (
            runs_of(directory, "slow") == 1
            and Checkpoint.objects.filter(
                thread_id=thread_id,
                checkpoint_ns="",
                checkpoint_id__in=writes.values("checkpoint_id"),
            ).exists()
        ),
        message="the probe's first super-step",
    )


def draining(run: Run, reason: str) -> None:
    """Wait until the worker has seen the stop request and asked LangGraph to drain."""
    wait_for(
        lambda: {"status": "running", "draining": reason} in lifecycle(run),
        message=f"run {run.pk} to drain ({reason})",
    )
