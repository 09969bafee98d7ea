"""Deploying another version of the ``drifting`` graph (``tests.helpers.drift_graphs``):
in this process (``deploy``: the registry builds its graphs again), and in a web server
and a worker of their own while the session's worker is paused (``deployed``); a thread
of v1 stopped at its interrupt, run in this process (``old_thread``)."""

from __future__ import annotations

import contextlib
import os
import time

from django.conf import settings

from durable import engine
from durable.engine import inline
from durable.engine.execution import execute
from durable.graphs import get_graph
from durable.models import Run, Thread
from tests.helpers.drift_graphs import VERSION_VARIABLE
from tests.helpers.processes import WebProcess, WorkerProcess


@contextlib.contextmanager
def deploy(version: int):
    """Build ``drifting`` as ``version`` in this process (and in the processes started
    meanwhile, which inherit its environment), until the block ends."""
    before = os.environ.get(VERSION_VARIABLE)
    os.environ[VERSION_VARIABLE] = str(version)
    get_graph.cache_clear()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(VERSION_VARIABLE, None)
        else:
            os.environ[VERSION_VARIABLE] = before
        get_graph.cache_clear()


@contextlib.contextmanager
def deployed(version: int, session_worker: WorkerProcess):
    """``version`` deployed: this process builds it (``deploy``), and a web server and a
    worker of its own run it, yielded as ``(web, worker)``; the session's worker, which
    built the old version, is paused meanwhile so that it takes none of their runs."""
    session_worker.pause()
    web = worker = None
    try:
        with deploy(version):
            web = WebProcess(settings.VAR_DIR / f"test-web-v{version}.log").start()
            worker = WorkerProcess(
                settings.VAR_DIR / f"test-worker-v{version}.log", name=f"v{version}"
            ).start()
            yield web, worker
    finally:
        for process in (worker, web):
            if process is not None:
                process.stop()
        session_worker.resume()


# Far longer than a drift graph's run takes.
SLOT_WAIT_SECONDS = 60


def ran(run: Run) -> Run:
    """``run`` executed in this process, as a worker would; returned fresh. A run that a
    console request of this process already took into one of its web run slots (a resume
    the page follows) is that slot's: it is waited for (up to ``SLOT_WAIT_SECONDS``), not
    claimed again, since a second claim of a run under way only finds it taken and leaves
    it running."""
    deadline = time.monotonic() + SLOT_WAIT_SECONDS
    while run.pk in inline.running() and time.monotonic() < deadline:
        time.sleep(0.02)
    execute(run.pk, worker="here")
    return Run.objects.get(pk=run.pk)


def old_thread(topic: str = "budget") -> Thread:
    """A thread of ``drifting`` v1 waiting at ``review``'s interrupt."""
    with deploy(1):
        run = ran(engine.start("drifting", {"topic": topic}))
    assert run.status == Run.Status.INTERRUPTED, run.error_message
    return Thread.objects.get(pk=run.thread_pk)
