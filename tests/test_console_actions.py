"""The console's action pages (inbox, fork, replay, run, store) through Django's test
client, and the parts of ``durable.runs`` they rely on.

Threads that only need to sit at an interrupt are run to it in this process
(``at_interrupt``): the same graph, saver and checkpoints a worker would write, without
waiting for one. Requests that start runs go to the session's real worker.
"""

from __future__ import annotations

import pytest

from durable import runs
from durable.graphs import get_graph
from durable.models import Checkpoint, CheckpointBlob, CheckpointWrite, Run, RunEvent, Thread

pytestmark = pytest.mark.django_db(transaction=True)

EXPENSE = {"employee": "Grace Hopper", "amount": 42.5, "description": "Compiler manual"}
INPUTS = {
    "expense_approval": EXPENSE,
    "parallel_review": {"document": "Lease"},
    "email_reply": {"customer": "ada@example.com", "question": "Where is my order?"},
}


def at_interrupt(graph: str = "expense_approval") -> Thread:
    """A thread of ``graph`` run, in this process, up to its interrupt(s)."""
    thread = runs.create_thread(graph)
    get_graph(graph).invoke(INPUTS[graph], runs.config_for(thread))
    Thread.objects.filter(pk=thread.pk).update(status=Thread.Status.INTERRUPTED)
    thread.refresh_from_db()
    return thread


def head(thread: Thread) -> str:
    return runs.thread_state(thread).config["configurable"]["checkpoint_id"]


def everything() -> dict[str, int]:
    """What a refused request must leave as it was."""
    counts = {
        model.__name__: model.objects.count()
        for model in (Thread, Run, RunEvent, Checkpoint, CheckpointBlob, CheckpointWrite)
    }
    return counts | {"statuses": sorted(Thread.objects.values_list("pk", "status"))}


# -- durable.runs: what the pages rely on ---------------------------------------------


def test_a_fork_keeps_its_metadata_on_the_checkpoint_it_writes():
    thread = at_interrupt()

    result = runs.fork(thread, head(thread), None, as_node="__end__", metadata={"reason": "dup"})

    row = Checkpoint.objects.get(thread_id=thread.thread_id, checkpoint_id=result.checkpoint_id)
    assert row.metadata["reason"] == "dup"
    assert row.metadata["source"] == "update"
    # Closed without resuming: nothing pending, nothing next, the thread idle.
    assert runs.pending_interrupts(thread) == []
    assert runs.thread_state(thread).next == ()
    assert Thread.objects.get(pk=thread.pk).status == Thread.Status.IDLE


def test_graph_shape_names_nodes_reducers_and_what_follows_a_node():
    shape = runs.graph_shape(at_interrupt("parallel_review"))

    assert shape.nodes == ("__start__", "legal_review", "finance_review", "decide")
    assert shape.combined_keys == {"reviews"}
    assert set(shape.state_keys) == {"document", "reviews", "verdict"}
    assert shape.after(["legal_review", "finance_review"]) == ["decide"]
    assert shape.after(["__start__"]) == ["legal_review", "finance_review", "decide"]


def test_graph_shape_follows_command_destinations_and_loops():
    shape = runs.graph_shape(at_interrupt("email_reply"))
    # review goes back to draft_reply (a response), so it may run again itself.
    assert shape.after(["review"]) == ["draft_reply", "review", "send"]
