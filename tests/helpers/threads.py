"""Threads made in the test process, without a worker: run up to their interrupt here
(``at_interrupt``, ``big_claim_thread``) with the graph, saver and checkpoints a worker
would write (``arrived``: and the interrupted run it would record, at a given time),
or with a run written by hand (``made_run``); and what a refused request must leave as
it was (``everything``; ``counts`` of threads, runs and checkpoints)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from durable import engine
from durable.graphs import get_graph
from durable.models import (
    Assistant,
    AssistantVersion,
    Checkpoint,
    CheckpointBlob,
    CheckpointWrite,
    Cron,
    Run,
    RunEvent,
    Thread,
)

EXPENSE = {"employee": "Grace Hopper", "amount": 42.5, "description": "Compiler manual"}
INPUTS = {
    "expense_approval": EXPENSE,
    "parallel_review": {"document": "Lease"},
    "email_reply": {"customer": "ada@example.com", "question": "Where is my order?"},
}
# A 2 MB string, far bigger than any page of the console should weigh.
BIG = "x" * (2 * 1024 * 1024)


def _interrupted(graph: str, values: dict) -> Thread:
    thread = engine.create_thread(graph)
    get_graph(graph).invoke(values, engine.config_for(thread))
    Thread.objects.filter(pk=thread.pk).update(status=Thread.Status.INTERRUPTED)
    thread.refresh_from_db()
    return thread


def at_interrupt(graph: str = "expense_approval") -> Thread:
    """A thread of ``graph`` run, in this process, up to its interrupt(s)."""
    return _interrupted(graph, INPUTS[graph])


def arrived(graph: str = "expense_approval", ago: timedelta = timedelta(minutes=5)) -> Thread:
    """A thread of ``graph`` at its interrupt(s), with the run a worker records when it
    stops there: its pending ``interrupts``, ended ``ago`` (when the interrupt arrived)."""
    thread = at_interrupt(graph)
    pending = engine.pending_interrupts(thread)
    Run.objects.create(
        thread=thread,
        graph=graph,
        kind=Run.Kind.START,
        status=Run.Status.INTERRUPTED,
        ended_at=timezone.now() - ago,
        interrupts=[{"id": i.id, "value": i.value} for i in pending],
    )
    return thread


def big_claim_thread() -> Thread:
    """An expense_approval thread at its approval interrupt, with a 2 MB description."""
    return _interrupted("expense_approval", {**EXPENSE, "description": BIG})


def head(thread: Thread) -> str:
    """The id of the thread's newest checkpoint."""
    return engine.thread_state(thread).config["configurable"]["checkpoint_id"]


def made_run(status=Run.Status.RUNNING, **fields) -> Run:
    """A run as the page sees it while a worker has it (or after), written by hand:
    no worker takes it (a running run has a worker; an ended one is done)."""
    thread = engine.create_thread("expense_approval")
    run = Run.objects.create(
        thread=thread, graph=thread.graph, kind="start", status=status, **fields
    )
    for event, data in (
        (RunEvent.LIFECYCLE, {"status": "running"}),
        ("tasks", {"id": "t1", "name": "validate", "input": {}, "triggers": ["start"]}),
        ("tasks", {"id": "t1", "name": "validate", "result": {}, "error": None, "interrupts": []}),
        ("updates", {"validate": {"status": "validated", "problems": []}}),
        ("tasks", {"id": "t2", "name": "request_approval", "input": {}, "triggers": ["x"]}),
    ):
        RunEvent.objects.append(run.pk, event, data)
    return run


def counts() -> tuple[int, int, int]:
    """How many threads, runs and checkpoints there are."""
    return Thread.objects.count(), Run.objects.count(), Checkpoint.objects.count()


def everything(running: Run | None = None) -> dict:
    """What a refused request must leave as it was: the rows of every table of threads,
    runs, events, checkpoints and assistants, and each thread's and run's status (but the events
    that a ``running`` run goes on writing meanwhile)."""
    counts = {
        model.__name__: model.objects.count()
        for model in (
            Thread,
            Run,
            Checkpoint,
            CheckpointBlob,
            CheckpointWrite,
            Assistant,
            AssistantVersion,
        )
    }
    events = RunEvent.objects.exclude(run=running) if running else RunEvent.objects
    return counts | {
        "RunEvent": events.count(),
        "thread statuses": sorted(Thread.objects.values_list("pk", "status")),
        "run statuses": sorted(Run.objects.values_list("pk", "status")),
        "crons": sorted(Cron.objects.values_list("pk", "schedule", "enabled")),
    }
