"""Executing runs in Celery workers: claim under a lease, stream, drain, recover.

**Lease.** A worker claims a pending run by raising its ``attempt`` and taking a lease
(``worker``, ``lease_expires_at`` = now + ``DURABLE_RUN_LEASE_SECONDS``). While the graph
runs, the lease is renewed by the process's beat thread every ``DURABLE_HEARTBEAT_SECONDS``
and, at most once a second, after a stream chunk. Every write of the worker is fenced by
its ``attempt``: once the reaper has handed the run to another worker, this one can no
longer change the row or write the run's events, and it stops.

**Events.** Each stream chunk and lifecycle change is stamped when it happens and
buffered; a batch is written (``durable.engine.records``) once its oldest has waited
``FLUSH_EVERY`` seconds, by the next chunk or by the beat thread while a node runs, and
the last one in the same transaction as the run's outcome. The claim and the outcome
are each one round trip on PostgreSQL.

**Drain.** A run asked to stop (``Run.stop_requested``: a cancel, a newer run's
``interrupt`` or ``rollback``, a timeout, or the worker's shutdown) is drained with
LangGraph's ``RunControl.request_drain`` (``langgraph/runtime.py``): the Pregel loop
finishes the super-step under way, saves its checkpoint, and ``stream`` raises
``GraphDrained`` before the next one starts (``langgraph/pregel/_loop.py``, ``tick``).
The worker learns of the request when it renews the lease. A run that has not reached a
boundary ``DURABLE_STOP_GRACE_SECONDS`` later is stopped hard: the worker kills the pool
process running it (what Celery's ``revoke(terminate=True)`` does, but without the
broadcast the embedded broker cannot deliver) and the reaper settles the run.

**Recovery.** ``reap``, which every worker's main process runs on a timer
(``durable.engine.tasks``), finds running runs whose lease expired, because their worker died
(SIGKILL, a lost machine) or was stopped hard, and re-enqueues them, or ends them as
their stop request says. A re-executed run goes on from the last checkpoint it wrote
with input ``None``: LangGraph loads that checkpoint and its pending writes, so in a
super-step with parallel nodes the nodes that had finished are not run again. Neither
the embedded broker nor Redis (visibility timeout: one hour) redelivers the task of a
killed worker promptly, so this durability lives in our tables.

**Shutdown.** On SIGTERM (warm shutdown) Celery sends ``worker_shutting_down`` in the
worker's main process; ``durable.engine.tasks`` then asks every run of this worker to drain
(``drain_worker``), and asks again every second until the worker has stopped, for the
runs it claims meanwhile (a task that reached the pool just before the signal). Each
stops after its super-step, goes back to ``pending`` and is enqueued again for another
worker (``hand_back``). This goes through the database because with the prefork pool
the runs execute in child processes, which do not receive the signal.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import threading
import time
from collections import Counter
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.db import connections, transaction
from django.db.models import Q
from django.utils import timezone
from langgraph.errors import GraphDrained
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import RunControl
from langgraph.types import Command, Interrupt

from durable.engine import operations as runs
from durable.engine import policy as scheduling
from durable.engine import records as runsql
from durable.graphs import get_graph
from durable.models import Checkpoint, Run, RunEvent, Thread
from durable.values import json_text, jsonable

logger = logging.getLogger(__name__)

STREAM_MODES = ["updates", "custom", "tasks"]
LOST = "lease lost"  # the drain reason of a worker whose run was handed to another
# Renew the lease after a chunk at most this often (seconds): the heartbeat thread keeps
# it anyway, and a chunk may come every few milliseconds.
RENEW_AFTER_CHUNK_EVERY = 1.0
# The longest a run's event waits in the worker before it is written (seconds), so that
# live progress stays live while events are written in batches.
FLUSH_EVERY = 0.1
# LangGraph's names (langgraph/_internal/_constants.py): the key of an ``updates`` chunk
# that carries interrupts, and the trigger of a task sent with ``Send``.
INTERRUPT = "__interrupt__"
PUSH = "__pregel_push"
LAST = (2, 0)  # the rank of an interrupt whose task did not say it started

_in_pool_child = False


def mark_pool_child() -> None:
    """Called in each prefork pool process (``worker_process_init``): only there may a
    hard stop kill the process, which runs nothing else."""
    global _in_pool_child
    _in_pool_child = True


def _seconds(name: str) -> float:
    return float(getattr(settings, name))


# -- executing -------------------------------------------------------------------------


def execute(run_id: int, *, worker: str = "") -> str:
    """Claim run ``run_id`` for ``worker`` (its Celery node name), stream its graph, and
    record the outcome. Returns the run's status afterwards, or ``"missing"`` when the
    run no longer exists. A run that is not pending, or that must wait for an earlier
    run of its thread, is left as it is."""
    run, claimed = runsql.claim(run_id, worker or "worker", _seconds("DURABLE_RUN_LEASE_SECONDS"))
    if run is None:
        logger.warning("run %s no longer exists", run_id)
        return "missing"
    if not claimed:
        return run.status
    try:
        execution = _Execution(run)
    except Exception as exc:  # e.g. a graph no longer registered: end it, not retry it
        logger.exception("run %s cannot start", run.pk)
        return _end(run, Run.Status.ERROR, error_type=type(exc).__name__, error_message=str(exc))
    return execution.execute()


def _must_wait(run: Run) -> bool:
    """An earlier run of the thread is running or still waits (enqueue)."""
    return (
        Run.objects.filter(thread_id=run.thread_id)
        .filter(Q(status=Run.Status.RUNNING) | Q(status=Run.Status.PENDING, pk__lt=run.pk))
        .exists()
    )


def _own_latest_checkpoint(run: Run) -> str | None:
    """The newest root checkpoint ``run`` wrote (``metadata["run_id"]``), or ``None``.
    Usually the thread's newest checkpoint: one index lookup. Otherwise the checkpoints
    newer than the one the run started from are searched (LangGraph's ids sort by time),
    never the thread's whole history."""
    head = (
        Checkpoint.objects.filter(thread_id=run.thread.thread_id, checkpoint_ns="")
        .order_by("-checkpoint_id")
        .values("checkpoint_id", "metadata")
        .first()
    )
    if head is None:
        return None
    if head["metadata"].get("run_id") == str(run.pk):
        return head["checkpoint_id"]
    own = scheduling.runs_checkpoints(run)
    if run.checkpoint_id:
        own = own.filter(checkpoint_id__gt=run.checkpoint_id)
    return own.values_list("checkpoint_id", flat=True).first()


def _newest_checkpoint_id(thread_id: str) -> str | None:
    return (
        Checkpoint.objects.filter(thread_id=thread_id, checkpoint_ns="")
        .order_by("-checkpoint_id")
        .values_list("checkpoint_id", flat=True)
        .first()
    )


class _Events:
    """A run's events, written in batches: each one INSERT (and one NOTIFY) on
    PostgreSQL (``runsql.insert_events``). An event gets its ``created_at`` when it
    happens; it is written within ``FLUSH_EVERY`` seconds, by the next chunk or by the
    beat thread while a node runs, and the last ones with the run's outcome. Batches
    are written one at a time, in order, so ``seq`` follows the order of events."""

    def __init__(self, run: Run):
        self.run = run
        self._buffer: list[runsql.Event] = []
        self._oldest: float | None = None  # when the oldest buffered event happened
        self._lock = threading.Lock()  # the buffer
        self._writing = threading.Lock()  # one batch at a time

    def add(self, event: str, data: Any, ns: str = "") -> None:
        """Buffer an event; ``data`` is made JSON-safe (``values.json_text``)."""
        self.add_text(event, json_text(data), ns)

    def add_text(self, event: str, text: str, ns: str = "") -> None:
        item = runsql.Event(event, ns, text, timezone.now())
        with self._lock:
            if not self._buffer:
                self._oldest = time.monotonic()
            self._buffer.append(item)

    def due(self) -> bool:
        oldest = self._oldest
        return oldest is not None and time.monotonic() - oldest >= FLUSH_EVERY

    def flush(self) -> None:
        """Write the buffered events, unless the run was handed to another attempt
        (whose events they are not)."""
        with self._writing:
            batch = self.take()
            try:
                runsql.insert_events(self.run, batch)
            except Exception:  # kept for the next try
                with self._lock:
                    self._buffer[:0] = batch
                    self._oldest = time.monotonic()
                raise

    def take(self) -> list[runsql.Event]:
        """The buffered events, which the caller writes."""
        with self._lock:
            batch, self._buffer, self._oldest = self._buffer, [], None
        return batch


class _Execution:
    """One attempt at a claimed run, in this worker."""

    def __init__(self, run: Run):
        self.run = run
        self.graph = get_graph(run.graph)
        self.control = RunControl()
        self.events = _Events(run)
        self.lease = _Lease(run, self.control, self.events)
        self.error_node = ""
        self.interrupts: list[Interrupt] = []
        self._task_rank: dict[str, tuple] = {}  # root task id -> its place in its step
        self._interrupt_rank: dict[str, tuple] = {}  # interrupt id -> its task's place

    def execute(self) -> str:
        run = self.run
        self.events.add(
            RunEvent.LIFECYCLE,
            {
                "status": Run.Status.RUNNING,
                "attempt": run.attempt,
                "worker": run.worker,
                "pid": os.getpid(),
            },
        )
        # The outcome is recorded once the heartbeat has stopped, so that it cannot
        # renew a lease the outcome has just let go.
        with self.lease.kept():
            try:
                self._run_graph()
                outcome = self._ended
            except GraphDrained as exc:
                outcome = functools.partial(self._drained, exc.reason)
            except Exception as exc:
                logger.exception("run %s failed", run.pk)
                outcome = functools.partial(self._failed, exc)
        return outcome()

    def _failed(self, exc: Exception) -> str:
        return self._finish(
            Run.Status.ERROR,
            error_type=type(exc).__name__,
            error_message=str(exc),
            error_node=self.error_node,
        )

    # -- what to stream ---------------------------------------------------------

    def _run_graph(self) -> None:
        run = self.run
        if run.attempt > 1 and (own := _own_latest_checkpoint(run)):
            self._go_on_from(own)
        elif run.kind == Run.Kind.START:
            self._stream(run.input, None)
        elif run.kind == Run.Kind.RESUME:
            self._resume()
        else:  # fork and replay start from their checkpoint with no input
            self._stream(None, run.checkpoint_id)

    def _go_on_from(self, own: str) -> None:
        """A later attempt: go on from the last checkpoint this run saved, as LangGraph
        resumes a thread: input ``None`` and no ``checkpoint_id``, so that the pending
        writes of the tasks that finished in the interrupted super-step are applied
        instead of those tasks running again. Naming the checkpoint would be time travel,
        which re-runs them (``langgraph/pregel/_loop.py``, ``is_time_traveling``). No
        fork is allowed while a run is active (``runs.fork``), so the thread's newest
        checkpoint is the run's own; if it is not, the run goes on from its own by id."""
        self.events.add(RunEvent.LIFECYCLE, {"status": "running", "continues_from": own})
        newest = _newest_checkpoint_id(self.run.thread.thread_id)
        if newest != own:
            logger.warning("run %s: newest checkpoint is not its own %s", self.run.pk, own)
        self._stream(None, None if newest == own else own)

    def _resume(self) -> None:
        run = self.run
        answer = run.command["resume"]
        if not run.forked_from:
            self._stream(Command(resume=answer), None)
            return
        # answer_again: the run starts on a copy of the interrupted checkpoint.
        old = self.graph.get_state(runs.config_for(run.thread, run.forked_from))
        old_ids = {i.id for i in old.interrupts}
        if not (isinstance(answer, dict) and answer and set(answer) <= old_ids):
            self._stream(Command(resume=answer), run.checkpoint_id)
            return
        # Answers by interrupt id: the copy's interrupts get new ids once they fire.
        self._stream(None, run.checkpoint_id)
        new = self.graph.get_state(runs.config_for(run.thread, run.checkpoint_id))
        if translated := _translate_answers(old, new, answer):
            self._stream(Command(resume=translated), run.checkpoint_id)

    def _config(self, checkpoint_id: str | None) -> dict:
        config = runs.config_for(self.run.thread, checkpoint_id)
        config["metadata"] = {**self.run.metadata, "run_id": str(self.run.pk)}
        return config

    def _stream(self, payload: Any, checkpoint_id: str | None) -> None:
        """Stream the graph from ``checkpoint_id`` (None: the thread's latest) with
        ``payload``, turning each chunk into a RunEvent. A graph with a node under a
        ``TimeoutPolicy`` streams through ``astream``: LangGraph cancels a timed-out
        attempt through asyncio, and sync ``stream`` refuses such a node
        (``langgraph/types.py``, ``TimeoutPolicy``). Other graphs stream synchronously,
        which costs less per super-step."""
        config = self._config(checkpoint_id)
        options = {
            "stream_mode": STREAM_MODES,
            "subgraphs": True,
            "durability": self.run.durability,
            "control": self.control,
        }
        self.interrupts.clear()  # the run stops at the last stream's
        self._task_rank.clear()
        self._interrupt_rank.clear()
        if _has_timeouts(self.graph):
            async_to_sync(self._astream)(payload, config, options)
            return
        for namespace, mode, chunk in self.graph.stream(payload, config, **options):
            self._on_chunk(namespace, mode, chunk)

    async def _astream(self, payload: Any, config: dict, options: dict) -> None:
        # Chunks are handled back on this worker's thread (asgiref's thread-sensitive
        # sync_to_async), where its database connection and lease live.
        on_chunk = sync_to_async(self._on_chunk)
        async for namespace, mode, chunk in self.graph.astream(payload, config, **options):
            await on_chunk(namespace, mode, chunk)

    def _on_chunk(self, namespace: tuple[str, ...], mode: str, chunk: Any) -> None:
        if not namespace:
            self._note(mode, chunk)
        self.events.add(mode, chunk, "|".join(namespace))
        if self.events.due():
            self.events.flush()
        self.lease.renew_now_and_then()

    def _note(self, mode: str, chunk: Any) -> None:
        """What a chunk of the graph itself (not of a subgraph) says about the outcome:
        the interrupts it stopped at (``updates`` chunks carry them under
        ``__interrupt__``, which is how LangGraph's own ``invoke`` collects them, a
        subgraph's included), the task that raised each, and a failed node."""
        if mode == "updates":
            if isinstance(chunk, dict) and (found := chunk.get(INTERRUPT)):
                self.interrupts.extend(found)
        elif mode == "tasks":
            if "input" in chunk:  # a task starts
                self._task_rank[chunk["id"]] = self._rank(chunk)
                return
            if chunk.get("error") is not None:
                self.error_node = chunk.get("name", "")
            for item in chunk.get("interrupts") or ():
                self._interrupt_rank[item["id"]] = self._task_rank.get(chunk["id"], LAST)

    def _rank(self, task: dict) -> tuple:
        """Where ``get_state`` lists a task of the step (``langgraph/pregel/_algo.py``,
        ``prepare_next_tasks``): tasks sent with ``Send`` first, as they were sent, then
        one per node in the order the graph declares its nodes (a running step takes
        them in the order of their names)."""
        if PUSH in task.get("triggers", ()):
            return (0, len(self._task_rank))
        return (1, _node_order(self.graph).get(task["name"], len(self._task_rank)))

    # -- outcomes ------------------------------------------------------------------

    def _ended(self) -> str:
        """The graph ended, or stopped at interrupts: those the last stream reported,
        in the order of their tasks (as ``get_state`` lists them)."""
        seen, interrupts = set(), []
        ranked = sorted(self.interrupts, key=lambda i: self._interrupt_rank.get(i.id, LAST))
        for item in ranked:
            if item.id not in seen:
                seen.add(item.id)
                interrupts.append({"id": item.id, "value": jsonable(item.value)})
        status = Run.Status.INTERRUPTED if interrupts else Run.Status.SUCCESS
        return self._finish(status, interrupts=interrupts)

    def _drained(self, reason: str) -> str:
        if reason == LOST:
            logger.warning("run %s: lease lost; another worker has it", self.run.pk)
            return LOST
        self._flush()
        if reason == Run.Stop.SHUTDOWN:
            return _requeue(self.run, "drained for the worker's shutdown", handed_back=True)
        if reason == Run.Stop.ROLLBACK:
            return _roll_back(self.run)
        status = Run.Status.TIMEOUT if reason == Run.Stop.TIMEOUT else Run.Status.CANCELLED
        return self._finish(status)

    def _flush(self) -> None:
        """Write the buffered events now, before an outcome that the ORM records."""
        runsql.insert_events(self.run, self.events.take())

    def _finish(self, status: str, **fields) -> str:
        if status not in runsql.THREAD_STATUS_AFTER:  # cancelled, timed out
            self._flush()
            # A rollback requested while the run was ending still applies.
            if _stop_requested(self.run) == Run.Stop.ROLLBACK:
                return _roll_back(self.run)
            return _end(self.run, status, **fields)
        # The last events, the run's status and its thread's, in one transaction.
        self.events.add(RunEvent.LIFECYCLE, _ended_event(status, fields))
        outcome = runsql.finish(self.run, status, fields, self.events.take())
        if outcome == runsql.LOST:
            return LOST
        if outcome == runsql.STOPPING:  # a rollback requested while the run was ending
            return _roll_back(self.run)
        return status


def _ended_event(status: str, fields: dict) -> dict:
    data = {"status": status}
    if fields.get("error_type"):
        data.update(error=fields["error_type"], node=fields.get("error_node", ""))
    return data


@functools.cache
def _node_order(graph: CompiledStateGraph) -> dict[str, int]:
    return {name: i for i, name in enumerate(graph.nodes)}


@functools.cache
def _has_timeouts(graph: CompiledStateGraph) -> bool:
    """Whether a node of ``graph`` runs under a ``TimeoutPolicy``."""
    return any(node.timeout for node in graph.builder.nodes.values())


def _translate_answers(old, new, answers: dict) -> dict:
    """Answers keyed by the interrupt ids of snapshot ``old`` re-keyed by the ids of the
    same interrupts in snapshot ``new``: same node, same rank among that node's tasks,
    same place among the task's interrupts."""

    def places(snapshot) -> dict[str, tuple]:
        seen: Counter = Counter()
        found = {}
        for task in snapshot.tasks:
            rank = seen[task.name]
            seen[task.name] += 1
            for index, item in enumerate(task.interrupts):
                found[item.id] = (task.name, rank, index)
        return found

    new_ids = {place: interrupt_id for interrupt_id, place in places(new).items()}
    old_places = places(old)
    return {
        new_ids[old_places[i]]: value
        for i, value in answers.items()
        if old_places.get(i) in new_ids
    }


def _stop_requested(run: Run) -> str:
    return Run.objects.filter(pk=run.pk).values_list("stop_requested", flat=True).first() or ""


def _mine(run: Run):
    """The run's row, if this attempt still holds it."""
    return Run.objects.filter(pk=run.pk, attempt=run.attempt, status=Run.Status.RUNNING)


def _end(run: Run, status: str, **fields) -> str:
    """The run ended: its status and its thread's, in one transaction."""
    with transaction.atomic():
        scheduling.lock_thread(run.thread_id)
        now = timezone.now()
        if not _mine(run).update(status=status, ended_at=now, lease_expires_at=None, **fields):
            return LOST
        RunEvent.objects.append(run.pk, RunEvent.LIFECYCLE, _ended_event(status, fields))
        scheduling.settle_thread(run.thread_id, status)
    return status


def _requeue(run: Run, detail: str, handed_back: bool = False) -> str:
    """Back to pending for another worker, from where it stopped: enqueued now, or, for
    a worker that is shutting down, by ``hand_back`` once it takes no more tasks (a
    worker on the embedded broker still receives tasks during its warm shutdown). Until
    then ``dispatched_at`` holds the reaper's redispatch off."""
    with transaction.atomic():
        scheduling.lock_thread(run.thread_id)
        changed = _mine(run).update(
            status=Run.Status.PENDING,
            worker="",
            lease_expires_at=None,
            stop_requested=Run.Stop.NONE,
            stop_requested_at=None,
            dispatched_at=timezone.now() if handed_back else None,
        )
        if not changed:
            return LOST
        RunEvent.objects.append(
            run.pk, RunEvent.LIFECYCLE, {"status": Run.Status.PENDING, "detail": detail}
        )
        if not handed_back:
            transaction.on_commit(lambda: scheduling.dispatch_next(run.thread_id))
    return Run.Status.PENDING


def _roll_back(run: Run) -> str:
    """Delete the run's checkpoints (``DjangoSaver.delete_for_runs``) and the run."""
    with transaction.atomic():
        scheduling.lock_thread(run.thread_id)
        if not Run.objects.filter(pk=run.pk, attempt=run.attempt).exists():
            return LOST
        get_graph(run.graph).checkpointer.delete_for_runs([str(run.pk)])
        Run.objects.filter(pk=run.pk).delete()
        scheduling.settle_thread(run.thread_id)
    return "rolled back"


# -- the lease ---------------------------------------------------------------------------


class _Lease:
    """The claim of one attempt on its run: renewed while the graph runs; the channel
    through which a stop request (or a lost lease) reaches the graph's ``RunControl``.
    The process's ``_Beat`` thread renews it and writes the run's buffered events while
    a node runs."""

    def __init__(self, run: Run, control: RunControl, events: _Events):
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
                if self.events.due():
                    self.events.flush()
                if time.monotonic() - self.last_renewal >= _seconds("DURABLE_HEARTBEAT_SECONDS"):
                    self.renew()
            except Exception:  # the database may be back at the next beat
                logger.exception("run %s: lease renewal failed", self.run.pk)
            if self._overdue():
                self._hard_stop()

    def renew_now_and_then(self) -> None:
        if time.monotonic() - self.last_renewal >= RENEW_AFTER_CHUNK_EVERY:
            with self._lock:
                self.renew()

    def renew(self) -> None:
        """Extend the lease; on a stop request, a timeout or a lost lease, drain."""
        self.last_renewal = time.monotonic()
        now = timezone.now()
        expires = now + timedelta(seconds=_seconds("DURABLE_RUN_LEASE_SECONDS"))
        mine = _mine(self.run)
        if self.control.drain_requested:
            if not mine.update(lease_expires_at=expires):
                self._drain(LOST)
            return
        if self.deadline is not None and now >= self.deadline:
            self.events.flush()  # the events so far come before the stop request's
            scheduling.request_stop(
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
        grace = _seconds("DURABLE_STOP_GRACE_SECONDS")
        return self.stopping_since is not None and time.monotonic() - self.stopping_since > grace

    def _hard_stop(self) -> None:
        """Kill this pool process: the run did not reach a super-step boundary in time.
        The lease is let go first, so the reaper settles the run at its next pass."""
        if not _in_pool_child:
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
    (``_Lease.beat``) every ``FLUSH_EVERY`` seconds (or heartbeat, when shorter), started
    with the process's first run: a thread of its own per run cost a start and a join,
    each a wait for the scheduler, on every run."""

    def __init__(self):
        self._leases: set[_Lease] = set()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def add(self, lease: _Lease) -> None:
        with self._changed:
            if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
                # First use in this process (a prefork child does not inherit threads).
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._run, name="durable-beat", daemon=True)
                self._thread.start()
            self._leases.add(lease)
            self._changed.notify()

    def discard(self, lease: _Lease) -> None:
        with self._changed:
            self._leases.discard(lease)

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._leases:
                    self._changed.wait()
            time.sleep(min(FLUSH_EVERY, _seconds("DURABLE_HEARTBEAT_SECONDS")))
            with self._changed:
                leases = list(self._leases)
            try:
                for lease in leases:
                    lease.beat()
            finally:
                connections.close_all()  # this thread's own connections


_beat = _Beat()


# -- the reaper --------------------------------------------------------------------------


def reap(limit: int = 100) -> dict[str, int]:
    """Settle runs whose worker is gone, and re-send runs whose message was lost.

    A running run whose lease expired goes back to pending and is enqueued again, or,
    if it had been asked to stop, ends as asked (cancelled, timed out, rolled back).
    A pending run at the head of its thread's queue that no worker has taken for
    ``DURABLE_REDISPATCH_SECONDS`` is sent again (a duplicate message is harmless: only
    one claim succeeds). Safe with many reapers at once: each claims rows with
    ``SELECT ... FOR UPDATE SKIP LOCKED`` on PostgreSQL (SQLite runs one writer at a
    time), each under its thread's lock, taken first as every run transaction does.
    Returns counts: ``{"requeued", "ended", "redispatched"}``."""
    counts = {"requeued": 0, "ended": 0, "redispatched": 0}
    now = timezone.now()
    stale = Run.objects.filter(status=Run.Status.RUNNING, lease_expires_at__lt=now)
    for run_id, thread_pk in stale.order_by("lease_expires_at").values_list("pk", "thread")[:limit]:
        with transaction.atomic():
            if not _lock_thread_row(thread_pk):
                continue  # deleted meanwhile
            run = stale.select_for_update(skip_locked=True).filter(pk=run_id).first()
            if run is not None:
                counts["requeued" if _settle_lost(run) else "ended"] += 1
    cutoff = now - timedelta(seconds=_seconds("DURABLE_REDISPATCH_SECONDS"))
    forgotten = Run.objects.filter(status=Run.Status.PENDING).filter(
        Q(dispatched_at__lt=cutoff) | Q(dispatched_at=None, created_at__lt=cutoff)
    )
    for run in forgotten.order_by("pk")[:limit]:
        with transaction.atomic():
            _lock_thread_row(run.thread_id)
            if forgotten.filter(pk=run.pk).exists() and not _must_wait(run):
                scheduling.dispatch(run)
                counts["redispatched"] += 1
    return counts


def _settle_lost(run: Run) -> bool:
    """A running run with an expired lease: requeue it (True), or end it as its stop
    request says (False). Runs inside the reaper's transaction, holding the row."""
    stop = run.stop_requested
    if stop in (Run.Stop.NONE, Run.Stop.SHUTDOWN):
        who = f"worker {run.worker or '?'} stopped renewing its lease"
        _requeue(run, f"{who}; re-enqueued")
        return True
    if stop == Run.Stop.ROLLBACK:
        _roll_back(run)
    else:
        _end(run, Run.Status.TIMEOUT if stop == Run.Stop.TIMEOUT else Run.Status.CANCELLED)
    return False


# -- shutdown ----------------------------------------------------------------------------


def drain_worker(hostname: str) -> list[int]:
    """Ask every run that worker ``hostname`` is running to drain, so that each goes back
    to pending after its super-step (from ``worker_shutting_down`` until the worker has
    stopped). Returns the ids of the runs asked now: a run already asked to stop is not
    asked again."""
    running = Run.objects.filter(worker=hostname, status=Run.Status.RUNNING)
    detail = f"worker {hostname} is shutting down"
    asked = [
        pk
        for pk in running.values_list("pk", flat=True)
        if scheduling.request_stop(pk, Run.Stop.SHUTDOWN, detail)
    ]
    if asked:
        logger.info("%s: asked run(s) %s to drain", hostname, asked)
    return asked


def hand_back(run_ids: list[int]) -> int:
    """Enqueue the runs this worker drained for its shutdown (``worker_shutdown``: it
    takes no more tasks now, so another worker gets them). Returns how many."""
    sent = 0
    for run in Run.objects.filter(pk__in=run_ids, status=Run.Status.PENDING).order_by("pk"):
        with transaction.atomic():
            if _lock_thread_row(run.thread_id) and not _must_wait(run):
                scheduling.dispatch(run)
                sent += 1
    return sent


def _lock_thread_row(thread_pk: int) -> bool:
    """Lock the thread's row in the current transaction; False if it is gone."""
    locked = Thread.objects.select_for_update(no_key=True).filter(pk=thread_pk)
    return bool(list(locked.values_list("pk", flat=True)))
