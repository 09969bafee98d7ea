"""Executing, in the web process, a run that one of its own requests waits on.

A request that waits for the run it makes (``runs.wait``, ``runs.stream``, a stateless
wait or stream, a resume the console follows) enters ``awaited()``. When the
transaction that wrote the run commits, ``take`` decides where the run goes: to a free
slot of this process (``DURABLE_WEB_RUN_SLOTS`` of them, threads off the event loop),
or, with none free, to the Celery workers as every other run goes
(``durable.engine.queue``). The decision is made once, at commit: a run taken here has no
message on the broker to race with. A slot executes the run through the one execution
path, ``execution.execute``: the same claim, lease, events, outcome and webhooks as a
worker, under the node name ``worker_name()``.

A killed web process is a killed worker: the run is ``dispatched`` (``records.dispatched``)
before it is taken, so if the process dies before its claim, the reaper counts its
message as lost after a lease and sends it; if it dies after, the lease expires and the
reaper requeues the run, which goes on from its last checkpoint. On SIGTERM
(``drain_on_sigterm``) the process takes no more runs; those it executes are asked to
drain after their super-step, back to pending, and are sent to the workers
(``recovery.hand_back``), within ``DURABLE_STOP_GRACE_SECONDS``; a run still executing
then has its lease let go, for the reaper.
"""

from __future__ import annotations

import contextvars
import logging
import os
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from django.db import connections
from django.utils import timezone

from durable import conf
from durable.engine import queue
from durable.models import Run

logger = logging.getLogger(__name__)

# Set by a request that waits for the run it makes (``awaited``); copied into the thread
# that writes the run (asgiref's ``sync_to_async`` copies the context).
_awaited: contextvars.ContextVar[bool] = contextvars.ContextVar("durable_awaited", default=False)


def worker_name() -> str:
    """This web process's node name, on the runs it claims (``Run.worker``)."""
    return f"web@{socket.gethostname()}:{os.getpid()}"


@contextmanager
def awaited():
    """Within it, a run this request writes may execute in this process
    (``take``). Entered on the event loop's thread, it also installs the SIGTERM drain
    (``drain_on_sigterm``), once."""
    if conf.DURABLE_WEB_RUN_SLOTS:
        drain_on_sigterm()
    token = _awaited.set(True)
    try:
        yield
    finally:
        _awaited.reset(token)


class _Slots:
    """The process's slots: a thread pool of ``DURABLE_WEB_RUN_SLOTS`` threads and the
    runs they execute."""

    def __init__(self):
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._size = 0
        self.running: set[int] = set()  # the runs taken and not yet done
        self.draining = False
        self.idle = threading.Condition(self._lock)

    def take(self, run: Run) -> bool:
        slots = conf.DURABLE_WEB_RUN_SLOTS
        if not slots or self.draining or run.not_before is not None:
            return False
        with self._lock:
            if len(self.running) >= slots:
                return False
            if self._pool is None or self._size != slots:
                # A changed setting (tests) gets a pool of its size; the old one finishes.
                if self._pool is not None:
                    self._pool.shutdown(wait=False)
                self._pool = ThreadPoolExecutor(slots, thread_name_prefix="durable-run")
                self._size = slots
            self.running.add(run.pk)
            self._pool.submit(self._execute, run.pk)
        return True

    def _execute(self, run_pk: int) -> None:
        from durable.engine import execution, follow  # execution -> queue -> here

        try:
            execution.execute(run_pk, worker=worker_name())
        except Exception:  # the outcome's own faults: the lease expires, the reaper settles
            logger.exception("run %s failed in the web process", run_pk)
        finally:
            # Its outcome is committed: the request that waits reads it now, not at its
            # next poll (SQLite) or once the notification has gone round (PostgreSQL).
            follow.wake_here(run_pk)
            connections.close_all()  # this thread's, back to the pool
            with self._lock:
                self.running.discard(run_pk)
                self.idle.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._lock:
            while self.running:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.idle.wait(left)
        return True


_slots = _Slots()


def take(run: Run) -> bool:
    """At the commit of the transaction that wrote ``run`` (pending, marked dispatched):
    execute it in this process if the request waits for it (``awaited``), a slot is free,
    the process is not draining and the run is not delayed. Returns whether it was taken;
    if not, the caller sends it to the workers."""
    return _awaited.get() and _slots.take(run)


queue.take_here(take)


def running() -> set[int]:
    """The ids of the runs this process executes now."""
    with _slots._lock:
        return set(_slots.running)


# -- SIGTERM ---------------------------------------------------------------------------

_installed = False


def drain_on_sigterm() -> None:
    """From the main thread (the event loop's), once: on SIGTERM, drain this process's
    runs (``drain``), then do what the server's own handler does (uvicorn's: stop
    accepting, finish the requests under way). Elsewhere, nothing."""
    global _installed
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGTERM)

    def on_sigterm(signum, frame):
        # The database work runs on a thread: this one runs the event loop, where the
        # ORM refuses to. The loop waits meanwhile, at most the drain timeout.
        worker = threading.Thread(target=drain, name="durable-drain")
        worker.start()
        worker.join(conf.DURABLE_STOP_GRACE_SECONDS + 5)
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.raise_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_sigterm)
    _installed = True


def drain() -> list[int]:
    """Take no more runs; ask those under way to drain after their super-step and wait
    for them, up to ``DURABLE_STOP_GRACE_SECONDS``; send the drained ones to the workers.
    A run still executing then has its lease let go, so that a worker's reaper requeues
    it at once rather than a lease later. Returns the ids of the runs handed back."""
    from durable.engine import lease, policy, recovery

    _slots.draining = True
    name = worker_name()
    asked = running()
    try:
        for pk in asked:
            policy.request_stop(pk, Run.Stop.SHUTDOWN, f"web process {name} is shutting down")
        lease.renew_all_soon()  # the stop requests are seen now, not at the next heartbeat
        done = _slots.wait_idle(conf.DURABLE_STOP_GRACE_SECONDS)
        if not done:
            left = running()
            logger.error("runs %s did not drain in time; their leases are let go", sorted(left))
            Run.objects.filter(pk__in=left, worker=name, status=Run.Status.RUNNING).update(
                lease_expires_at=timezone.now()
            )
        handed = recovery.hand_back(sorted(asked))
        if asked:
            logger.info("web process %s: drained run(s) %s, %s handed back", name, asked, handed)
        return sorted(asked)
    finally:
        connections.close_all()
