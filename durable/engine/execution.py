"""Executing a claimed run in a Celery worker: claim it (``records.claim``), stream its
graph under a lease (``durable.engine.lease``), buffer each chunk as a ``RunEvent``
(``durable.engine.buffer``), then record how it ended, or drain it when asked to stop.

A fault of the database itself (``durable.db.is_fault``: a connection lost, the server
restarting, a deadlock) is not the graph's failure. The claim and the outcome are tried
again on a fresh connection (``durable.db.retrying``); a fault while a chunk's events or
the lease are written is logged and streaming goes on; a fault that stops the graph
(its checkpointer's, say) abandons the attempt: the run goes back to pending and is
enqueued at once (``requeue``), and its next attempt goes on from its last checkpoint
(``_go_on_from``), so nodes whose writes were saved do not run again.
"""

from __future__ import annotations

import functools
import logging
import os
import uuid
from collections import Counter
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from django.db import transaction
from django.utils import timezone
from langgraph.errors import GraphDrained
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import RunControl
from langgraph.types import Command, Interrupt

from durable import conf, logcontext
from durable import db as sql
from durable.engine import policy, queue, records, requests, versions
from durable.engine.buffer import EventBuffer
from durable.engine.checks import langgraph_mode
from durable.engine.lease import LOST, Lease
from durable.engine.parent_messages import PARENT_MESSAGES, ParentView
from durable.engine.state import config_for
from durable.graphs import get_graph, thread_graph
from durable.history import newest_checkpoint_id, root_checkpoints
from durable.models import Run, RunEvent
from durable.persistence.metadata import MetadataKeyEquals
from durable.redaction import redact_text
from durable.values import jsonable

logger = logging.getLogger(__name__)

# What every run records, whatever its followers asked: the outcome is read from
# ``updates`` and ``tasks`` (``_note``), and the console shows ``custom`` progress. The
# modes a run was asked for (``Run.stream_modes``) come on top (``langgraph_modes``).
STREAM_MODES = ["updates", "custom", "tasks"]
# The RunEvent of an ``astream_events`` v2 record, and the mode that asks for them.
EVENTS = "events"
# LangGraph's names (langgraph/_internal/_constants.py): the key of an ``updates`` chunk
# that carries interrupts, and the trigger of a task sent with ``Send``.
INTERRUPT = "__interrupt__"
PUSH = "__pregel_push"
LAST = (2, 0)  # the rank of an interrupt whose task did not say it started


def execute(run_id: int, *, worker: str = "", queue: str = "") -> str:
    """Claim run ``run_id`` for ``worker`` (its Celery node name), stream its graph, and
    record the outcome. Returns the run's status afterwards, or ``"missing"`` when the
    run is not in the database (logged once, with ``queue``, the queue its message came
    from). A run that is not pending, or that must wait for an earlier run of its
    thread, is left as it is. What is logged meanwhile carries the run's fields
    (``durable.logcontext``)."""
    with logcontext.bound(run_id=run_id):
        lease = conf.DURABLE_RUN_LEASE_SECONDS
        run, claimed = sql.retrying(records.claim, run_id, worker or "worker", lease)
        if run is None:
            # A run deleted since it was sent, or the message of another deployment
            # whose workers share this broker and queue (DURABLE_QUEUE tells them apart).
            logger.warning(
                "run %s is not in this deployment's database; its message from queue %r"
                " is dropped (the run was deleted, or another deployment shares this"
                " broker and queue: give each its own DURABLE_QUEUE)",
                run_id,
                queue or conf.DURABLE_QUEUE,
            )
            return "missing"
        if not claimed:
            return run.status
        thread = run.thread
        with logcontext.bound(
            thread_id=thread.name, tenant=thread.tenant.slug, graph=run.graph, attempt=run.attempt
        ):
            return _execute(run)


def _execute(run: Run) -> str:
    try:
        execution = _Execution(run)
    except Exception as exc:  # e.g. a graph no longer registered: end it, not retry it
        logger.exception("run %s cannot start", run.pk)
        return sql.retrying(
            end,
            run,
            Run.Status.ERROR,
            error_type=type(exc).__name__,
            error_message=redact_text(str(exc)),
        )
    return execution.execute()


def _own_latest_checkpoint(run: Run) -> str | None:
    """The newest root checkpoint ``run`` wrote (``metadata["run_id"]``), or ``None``.
    Usually the thread's newest checkpoint: one index lookup. Otherwise the checkpoints
    newer than the one the run started from are searched (LangGraph's ids sort by time),
    never the thread's whole history."""
    checkpoints = root_checkpoints(run.thread.thread_id)
    head = checkpoints.values("checkpoint_id", "metadata").first()
    if head is None:
        return None
    if head["metadata"].get("run_id") == str(run.pk):
        return head["checkpoint_id"]
    own = checkpoints.filter(MetadataKeyEquals("run_id", str(run.pk)))
    if run.checkpoint_id:
        own = own.filter(checkpoint_id__gt=run.checkpoint_id)
    return own.values_list("checkpoint_id", flat=True).first()


class _Execution:
    """One attempt at a claimed run, in this worker."""

    def __init__(self, run: Run):
        self.run = run
        self.registered = get_graph(run.graph)  # what the caches below key on
        self.graph = thread_graph(run.thread)  # a copy of it, with the tenant's store
        # Which structure of the graph this worker runs, on the run, its thread and,
        # through the config's metadata, every checkpoint it writes.
        self.version = sql.retrying(versions.record_run, run, self.registered)
        self.control = RunControl()
        self.events = EventBuffer(run)
        self.lease = Lease(run, self.control, self.events)
        self.error_node = ""
        self.interrupts: list[Interrupt] = []
        self.at_breakpoint = False  # the last stream stopped at interrupt_before/after
        self._task_rank: dict[str, tuple] = {}  # root task id -> its place in its step
        self._interrupt_rank: dict[str, tuple] = {}  # interrupt id -> its task's place
        self.parent_view: ParentView | None = None  # for streams without subgraphs

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
                if sql.is_fault(exc):
                    logger.warning("run %s: database fault, abandoning the attempt", run.pk)
                    outcome = functools.partial(self._abandoned, exc)
                else:
                    logger.exception("run %s failed", run.pk)
                    outcome = functools.partial(self._failed, exc)
        return outcome()

    def _abandoned(self, exc: Exception) -> str:
        """The attempt stopped on a fault of the database: back to pending, enqueued now,
        for a next attempt on a fresh connection (this worker's or another's)."""
        sql.replace_connection(records.USING)
        self._flush()
        first_line = next(iter(str(exc).splitlines()), "")
        detail = f"database fault ({type(exc).__name__}: {first_line}); re-enqueued"
        return sql.retrying(requeue, self.run, detail)

    def _failed(self, exc: Exception) -> str:
        return self._finish(
            Run.Status.ERROR,
            error_type=type(exc).__name__,
            # What the run's page and answers show: sensitive values masked.
            error_message=redact_text(str(exc)),
            error_node=self.error_node,
        )

    # -- what to stream ---------------------------------------------------------

    def _run_graph(self) -> None:
        """Stream the graph as the run's kind asks. A re-executed run (a later
        ``attempt``) goes on from the last checkpoint it wrote instead (``_go_on_from``),
        so in a super-step with parallel nodes the nodes that had finished are not run
        again."""
        run = self.run
        if run.attempt > 1 and (own := _own_latest_checkpoint(run)):
            self._go_on_from(own)
        elif run.kind == Run.Kind.START:
            self._stream(run.input, None)
        elif run.kind == Run.Kind.RESUME:
            self._resume()
        else:  # fork and replay start from their checkpoint, a fork with input there
            self._stream(run.input, run.checkpoint_id)

    def _go_on_from(self, own: str) -> None:
        """A later attempt: go on from the last checkpoint this run saved, as LangGraph
        resumes a thread: input ``None`` and no ``checkpoint_id``, so that the pending
        writes of the tasks that finished in the interrupted super-step are applied
        instead of those tasks running again. Naming the checkpoint would be time travel,
        which re-runs them (``langgraph/pregel/_loop.py``, ``is_time_traveling``). No
        fork is allowed while a run is active (``operations.fork``), so the thread's newest
        checkpoint is the run's own; if it is not, the run goes on from its own by id."""
        self.events.add(RunEvent.LIFECYCLE, {"status": "running", "continues_from": own})
        newest = newest_checkpoint_id(self.run.thread.thread_id)
        if newest != own:
            logger.warning("run %s: newest checkpoint is not its own %s", self.run.pk, own)
        self._stream(None, None if newest == own else own)

    def _resume(self) -> None:
        run = self.run
        answers = requests.answers_by_id(run)
        # answer_again starts on a copy of the interrupted checkpoint, whose interrupts
        # get new ids once they fire: answers by id wait for them.
        if not run.forked_from or answers is None:
            self._stream(requests.command(run), run.checkpoint_id or None)
            return
        old = self.graph.get_state(config_for(run.thread, run.forked_from))
        self._stream(None, run.checkpoint_id)
        new = self.graph.get_state(config_for(run.thread, run.checkpoint_id))
        if translated := _translate_answers(old, new, answers):
            self._stream(Command(resume=translated), run.checkpoint_id)

    def _config(self, checkpoint_id: str | None) -> dict:
        """The thread's config, over the caller's (``Run.config``: its ``configurable``
        keys, ``recursion_limit``, ``tags``); the keys that name the thread and the
        checkpoint are ours."""
        asked = self.run.config or {}
        config = {k: v for k, v in asked.items() if k in ("recursion_limit", "tags")}
        own = config_for(self.run.thread, checkpoint_id)
        config["configurable"] = {**asked.get("configurable", {}), **own["configurable"]}
        config["metadata"] = {
            **self.run.metadata,
            "run_id": str(self.run.pk),
            versions.METADATA_KEY: self.version.digest,
        }
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
            "stream_mode": langgraph_modes(self.run.stream_modes),
            "subgraphs": True,
            "durability": self.run.durability,
            "control": self.control,
            # LangGraph's breakpoints and runtime context, as the caller asked.
            "interrupt_before": self.run.interrupt_before,
            "interrupt_after": self.run.interrupt_after,
        }
        if self.run.context is not None:
            options["context"] = self.run.context
        self.interrupts.clear()  # the run stops at the last stream's
        self.at_breakpoint = False
        self._task_rank.clear()
        self._interrupt_rank.clear()
        if "messages" in options["stream_mode"]:
            # What a client streaming without subgraphs gets that this stream does not.
            self.parent_view = ParentView()
            config["callbacks"] = self.parent_view.callbacks
        try:
            if EVENTS in self.run.stream_modes:
                async_to_sync(self._astream_events)(payload, config, options)
            elif _has_timeouts(self.registered):
                async_to_sync(self._astream)(payload, config, options)
            else:
                for namespace, mode, chunk in self.graph.stream(payload, config, **options):
                    self._on_chunk(namespace, mode, chunk)
        finally:
            self._record_parent_view()

    async def _astream(self, payload: Any, config: dict, options: dict) -> None:
        # Chunks are handled back on this worker's thread (asgiref's thread-sensitive
        # sync_to_async), where its database connection and lease live.
        on_chunk = sync_to_async(self._on_chunk)
        async for namespace, mode, chunk in self.graph.astream(payload, config, **options):
            await on_chunk(namespace, mode, chunk)

    async def _astream_events(self, payload: Any, config: dict, options: dict) -> None:
        """Stream through ``astream_events`` (version v2), as the Agent Server does for a
        run asked for ``events``: the graph's own stream chunks come back as
        ``on_chain_stream`` records of the root run (the ``run_id`` given in its config)
        and are handled as chunks; every other record, a hidden one aside
        (``langsmith:hidden``), is kept as an ``events`` RunEvent."""
        root = uuid.uuid4()
        on_record = sync_to_async(self._on_record)
        stream = self.graph.astream_events(
            payload, {**config, "run_id": root}, version="v2", **options
        )
        async for record in stream:
            await on_record(record, str(root))

    def _on_record(self, record: dict, root: str) -> None:
        if record["event"] == "on_chain_stream" and record["run_id"] == root:
            self._on_chunk(*record["data"]["chunk"])
        elif "langsmith:hidden" not in (record.get("tags") or ()):
            self._record(EVENTS, record, "")

    def _on_chunk(self, namespace: tuple[str, ...], mode: str, chunk: Any) -> None:
        self._record_parent_view()
        if not namespace:
            self._note(mode, chunk)
        self._record(mode, chunk, "|".join(namespace))

    def _record_parent_view(self) -> None:
        """Record what the parent's view found (``durable.engine.parent_messages``)
        before the chunk that follows it."""
        if self.parent_view is not None:
            for found in self.parent_view.take():
                self._record(PARENT_MESSAGES, found, "")

    def _record(self, event: str, data: Any, ns: str) -> None:
        """Buffer a RunEvent, writing the buffer when it is due and renewing the lease."""
        self.events.add(event, data, ns)
        try:
            if self.events.due():
                self.events.flush()
            elif self.events.urgent():
                self.lease.flush_soon()
            self.lease.renew_now_and_then()
        except Exception as exc:
            if not sql.is_fault(exc):
                raise
            # As the beat thread does: the events stay buffered and the lease is renewed
            # at the next try, on a fresh connection.
            logger.warning("run %s: database fault while streaming: %s", self.run.pk, exc)
            sql.replace_connection(records.USING)

    def _note(self, mode: str, chunk: Any) -> None:
        """What a chunk of the graph itself (not of a subgraph) says about the outcome:
        the interrupts it stopped at (``updates`` chunks carry them under
        ``__interrupt__``, which is how LangGraph's own ``invoke`` collects them, a
        subgraph's included), the task that raised each, and a failed node."""
        if mode == "updates":
            if isinstance(chunk, dict) and INTERRUPT in chunk:
                # A breakpoint stops the graph with no interrupt: an empty one.
                found = chunk[INTERRUPT]
                self.interrupts.extend(found)
                self.at_breakpoint = not found
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
        return (1, _node_order(self.registered).get(task["name"], len(self._task_rank)))

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
        stopped = interrupts or self.at_breakpoint
        status = Run.Status.INTERRUPTED if stopped else Run.Status.SUCCESS
        return self._finish(status, interrupts=interrupts)

    def _drained(self, reason: str) -> str:
        """The graph stopped for ``reason`` (``Run.stop_requested``: a cancel, a newer
        run's ``interrupt`` or ``rollback``, a timeout, the worker's shutdown; or
        ``LOST``). LangGraph's ``RunControl.request_drain`` (``langgraph/runtime.py``)
        lets the Pregel loop finish the super-step under way and save its checkpoint;
        ``stream`` then raises ``GraphDrained`` before the next one starts
        (``langgraph/pregel/_loop.py``, ``tick``). The run ends as asked (``end``,
        ``roll_back``) or, for a shutdown, goes back to pending for another worker
        (``requeue``): the outcomes the reaper (``durable.engine.recovery``) gives a run
        whose worker died."""
        if reason == LOST:
            logger.warning("run %s: lease lost; another worker has it", self.run.pk)
            return LOST
        self._flush()
        if reason == Run.Stop.SHUTDOWN:
            detail = "drained for the worker's shutdown"
            return sql.retrying(requeue, self.run, detail, handed_back=True)
        if reason == Run.Stop.ROLLBACK:
            return sql.retrying(roll_back, self.run)
        status = Run.Status.TIMEOUT if reason == Run.Stop.TIMEOUT else Run.Status.CANCELLED
        return self._finish(status)

    def _flush(self) -> None:
        """Write the buffered events now, before an outcome that the ORM records."""
        sql.retrying(records.insert_events, self.run, self.events.take())

    def _finish(self, status: str, **fields) -> str:
        if status not in policy.THREAD_STATUS_AFTER:  # cancelled, timed out
            self._flush()
            # A rollback requested while the run was ending still applies.
            if sql.retrying(_stop_requested, self.run) == Run.Stop.ROLLBACK:
                return sql.retrying(roll_back, self.run)
            return sql.retrying(end, self.run, status, **fields)
        # The last events, the run's status and its thread's, in one transaction, on a
        # fresh connection if the graph's ended with the database.
        self.events.add(RunEvent.LIFECYCLE, _ended_event(status, fields))
        outcome = sql.retrying(
            records.finish,
            self.run,
            status,
            fields,
            self.events.take(),
            thread_status=policy.thread_status_after(status),
        )
        if outcome == records.LOST:
            return LOST
        if outcome == records.STOPPING:  # a rollback requested while the run was ending
            return sql.retrying(roll_back, self.run)
        if outcome == records.QUEUED:
            sql.retrying(queue.dispatch_next, self.run.thread_pk)
        queue.send(policy.ended(self.run))  # once the outcome is committed
        return status


def _ended_event(status: str, fields: dict) -> dict:
    data = {"status": status}
    if fields.get("error_type"):
        data.update(error=fields["error_type"], node=fields.get("error_node", ""))
    return data


def langgraph_modes(recorded: list[str]) -> list[str]:
    """What a run asks of LangGraph's stream: ``STREAM_MODES``, and the modes it was
    asked to record (``checks.STREAM_MODES``) as LangGraph names them: ``messages-tuple``
    is LangGraph's ``messages`` (the API shapes its chunks either way); ``events`` is no
    stream mode but ``astream_events``'s records (``_astream_events``)."""
    modes = list(STREAM_MODES)
    for mode in recorded:
        mode = langgraph_mode(mode)
        if mode != EVENTS and mode not in modes:
            modes.append(mode)
    return modes


# Cached on the registry's compiled graph, not on a run's copy of it (``thread_graph``):
# one entry per graph, not one per run for the worker's lifetime.
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


# -- how a run ends, short of the hot path (``records.finish``) ------------------------


def end(run: Run, status: str, **fields) -> str:
    """The run ended with ``status`` (and ``fields``): its row, its event and its
    thread's status, in one transaction. Returns ``status``, or ``LOST`` when this
    attempt no longer holds the run."""
    with transaction.atomic():
        records.lock_thread(run.thread_pk)
        now = timezone.now()
        changed = records.held(run).update(
            status=status, ended_at=now, lease_expires_at=None, **fields
        )
        if not changed:
            return LOST
        RunEvent.objects.append(run.pk, RunEvent.LIFECYCLE, _ended_event(status, fields))
        queue.send(policy.settle_thread(run.thread_pk, status) | policy.ended(run))
    return status


def requeue(run: Run, detail: str, handed_back: bool = False) -> str:
    """Back to pending for another worker, from where it stopped: enqueued now, or, for
    a worker that is shutting down, by ``recovery.hand_back`` once it takes no more
    tasks (a worker on the embedded broker still receives tasks during its warm
    shutdown). Until then ``dispatched_at`` holds the reaper's redispatch off."""
    with transaction.atomic():
        records.lock_thread(run.thread_pk)
        changed = records.held(run).update(
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
            queue.send(policy.Sends(next_of=[run.thread_pk]))
    return Run.Status.PENDING


def roll_back(run: Run) -> str:
    """Delete the run's checkpoints (``DjangoSaver.delete_for_runs``) and the run."""
    with transaction.atomic():
        records.lock_thread(run.thread_pk)
        if not Run.objects.filter(pk=run.pk, attempt=run.attempt).exists():
            return LOST
        get_graph(run.graph).checkpointer.delete_for_runs([str(run.pk)])
        Run.objects.filter(pk=run.pk).delete()
        queue.send(policy.settle_thread(run.thread_pk))
    return "rolled back"
