"""The lease of a run in its worker, and the beat thread that keeps it.

A worker claims a pending run by raising its ``attempt`` and taking a lease (``worker``,
``lease_expires_at`` = now + ``DURABLE_RUN_LEASE_SECONDS``). While the graph runs, the
lease is renewed by the process's beat thread every ``DURABLE_HEARTBEAT_SECONDS`` and, at
most once a second, after a stream chunk. Every write of the worker is fenced by its
``attempt`` (``records.held``): once the reaper has handed the run to another worker,
this one can no longer change the row or write the run's events, and it stops.

A run asked to stop (``Run.stop_requested``) learns of it when it renews the lease, and
is drained through its ``RunControl`` (``durable.engine.execution``). One that has not
reached a super-step boundary ``DURABLE_STOP_GRACE_SECONDS`` later is stopped hard: the
worker kills the pool process running it (what Celery's ``revoke(terminate=True)`` does,
but without the broadcast the embedded broker cannot deliver) and the reaper settles the
run.
"""

from __future__ import annotations

import contextvars
import logging
import os
import signal
import threading
import time
from contextlib import contextmanager
from datetime import timedelta

from django.db import connections
from django.utils import timezone
from langgraph.runtime import RunControl

from durable import conf
from durable.engine import policy, records
from durable.engine.buffer import FLUSH_EVERY, EventBuffer
from durable.models import Run, RunEvent

logger = logging.getLogger(__name__)

LOST = "lease lost"  # the drain reason of a worker whose run was handed to another
# Renew the lease after a chunk at most this often (seconds): the beat thread keeps it
# anyway, and a chunk may come every few milliseconds.
RENEW_AFTER_CHUNK_EVERY = 1.0


def mark_pool_child() -> None:
    """Called in each prefork pool process (``worker_process_init``): only there may a
    hard stop kill the process, which runs nothing else."""
    _beat.in_pool_child = True


def renew_all_soon() -> None:
    """Have the beat thread renew every lease of this process now, not at its next
    heartbeat: a stop request just recorded for them is then seen at once."""
    _beat.renew_all()


def in_pool_child() -> bool:
    """Whether this process is a prefork pool process (``mark_pool_child``)."""
    return _beat.in_pool_child


class Lease:
    """The claim of one attempt on its run: renewed while the graph runs; the channel
    through which a stop request (or a lost lease) reaches the graph's ``RunControl``.
    The process's ``_Beat`` thread renews it and writes the run's buffered events while
    a node runs."""

    def __init__(self, run: Run, control: RunControl, events: EventBuffer):
        self.run = run
        self.control = control
        self.events = events
        self.deadline = (
            run.started_at + timedelta(seconds=run.timeout_seconds) if run.timeout_seconds else None
        )
        self.stopping_since: float | None = None
        self.last_renewal = time.monotonic()
        self._warned = False
        # Held while the lease is renewed or its events written; ``released`` once let go.
        self._lock = threading.Lock()
        self._released = False
        # The context it was made in (the run's log fields: durable.logcontext), for the
        # beat thread's lines about it.
        self.context = contextvars.copy_context()

    @contextmanager
    def kept(self):
        _beat.add(self)
        try:
            yield
        finally:
            # Once this returns, no renewal or write of the beat is under way or to come.
            with self._lock:
                self._released = True
            _beat.discard(self)

    def beat(self) -> None:
        """From the beat thread: write the events that waited ``FLUSH_EVERY``, renew the
        lease once ``DURABLE_HEARTBEAT_SECONDS`` have passed since it last was, and stop
        the process of a run that did not drain in time."""
        with self._lock:
            if self._released:
                return
            try:
                if self.events.due() or self.events.urgent():
                    self.events.flush()
                if time.monotonic() - self.last_renewal >= conf.DURABLE_HEARTBEAT_SECONDS:
                    self.renew()
            except Exception:  # the database may be back at the next beat
                logger.exception("run %s: lease renewal failed", self.run.pk)
            if self._overdue():
                self._hard_stop()

    def flush_soon(self) -> None:
        """Have the beat thread write the buffered events now, not at its next beat."""
        _beat.wake()

    def renew_now_and_then(self) -> None:
        if time.monotonic() - self.last_renewal >= RENEW_AFTER_CHUNK_EVERY:
            with self._lock:
                self.renew()

    def renew(self) -> None:
        """Extend the lease; on a stop request, a timeout or a lost lease, drain."""
        self.last_renewal = time.monotonic()
        now = timezone.now()
        expires = now + timedelta(seconds=conf.DURABLE_RUN_LEASE_SECONDS)
        mine = records.held(self.run)
        if self.control.drain_requested:
            if not mine.update(lease_expires_at=expires):
                self._drain(LOST)
            return
        if self.deadline is not None and now >= self.deadline:
            self.events.flush()  # the events so far come before the stop request's
            policy.request_stop(
                self.run.pk, Run.Stop.TIMEOUT, f"timed out after {self.run.timeout_seconds:g} s"
            )
        if mine.filter(stop_requested=Run.Stop.NONE).update(lease_expires_at=expires):
            return
        row = Run.objects.filter(pk=self.run.pk).values("attempt", "status", "stop_requested")
        row = row.first()
        if row and row["attempt"] == self.run.attempt and row["status"] == Run.Status.RUNNING:
            mine.update(lease_expires_at=expires)
            self._drain(row["stop_requested"])
        else:
            self._drain(LOST)

    def _drain(self, reason: str) -> None:
        """Stop before the next super-step; say so in an event (not when the lease is
        lost: the run's events belong to the worker that holds it now)."""
        logger.info("run %s: draining (%s)", self.run.pk, reason)
        self.control.request_drain(reason)
        self.stopping_since = time.monotonic()
        if reason != LOST:
            self.events.add(RunEvent.LIFECYCLE, {"status": Run.Status.RUNNING, "draining": reason})

    def _overdue(self) -> bool:
        grace = conf.DURABLE_STOP_GRACE_SECONDS
        return self.stopping_since is not None and time.monotonic() - self.stopping_since > grace

    def _hard_stop(self) -> None:
        """Kill this pool process: the run did not reach a super-step boundary in time.
        The lease is let go first, so the reaper settles the run at its next pass."""
        if not _beat.in_pool_child:
            if not self._warned:
                logger.error(
                    "run %s did not stop within the grace period; only a prefork pool "
                    "process can be stopped hard, so it runs on to its next super-step",
                    self.run.pk,
                )
                self._warned = True
            return
        detail = f"no super-step boundary within the grace period; killed process {os.getpid()}"
        self.events.add(RunEvent.LIFECYCLE, {"status": Run.Status.RUNNING, "detail": detail})
        self.events.flush()
        Run.objects.filter(pk=self.run.pk, attempt=self.run.attempt).update(
            lease_expires_at=timezone.now()
        )
        logger.error("run %s: %s", self.run.pk, detail)
        os.kill(os.getpid(), signal.SIGKILL)


class _Beat:
    """One thread per worker process that beats for the leases of the runs under way
    (``Lease.beat``) every ``FLUSH_EVERY`` seconds (or heartbeat, when shorter), or at once
    when woken for a run's urgent events (``Lease.flush_soon``), started
    with the process's first run: a thread of its own per run cost a start and a join,
    each a wait for the scheduler, on every run. ``in_pool_child``: whether this process
    is a prefork pool process, which a hard stop may kill (``mark_pool_child``)."""

    def __init__(self):
        self.in_pool_child = False
        self._leases: set[Lease] = set()
        self._changed = threading.Condition()
        self._woken = threading.Event()  # beat now: a run has urgent events
        self._thread: threading.Thread | None = None
        self._pid = 0

    def add(self, lease: Lease) -> None:
        with self._changed:
            if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
                # First use in this process (a prefork child does not inherit threads).
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._run, name="durable-beat", daemon=True)
                self._thread.start()
            self._leases.add(lease)
            self._changed.notify()

    def wake(self) -> None:
        self._woken.set()

    def renew_all(self) -> None:
        with self._changed:
            for lease in self._leases:
                lease.last_renewal = float("-inf")
        self.wake()

    def discard(self, lease: Lease) -> None:
        with self._changed:
            self._leases.discard(lease)

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._leases:
                    self._changed.wait()
            self._woken.wait(min(FLUSH_EVERY, conf.DURABLE_HEARTBEAT_SECONDS))
            self._woken.clear()
            with self._changed:
                leases = list(self._leases)
            try:
                for lease in leases:
                    lease.context.run(lease.beat)
            finally:
                connections.close_all()  # this thread's own connections


_beat = _Beat()
