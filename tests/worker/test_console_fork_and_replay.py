"""The console's fork and replay pages through Django's test client, the parts of
``durable.engine`` they rely on, and forks and replays a worker runs.

Threads that only need to sit at an interrupt are run to it in this process
(``at_interrupt``): the same graph, saver and checkpoints a worker would write, without
waiting for one. Requests that start runs go to the session's real worker.
"""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from durable import engine
from durable.models import Checkpoint, Run, Thread
from tests.helpers.runs import posted_run
from tests.helpers.threads import at_interrupt, everything, head

pytestmark = pytest.mark.django_db(transaction=True)

# -- durable.engine: what the pages rely on ---------------------------------------------


def test_a_fork_keeps_its_metadata_on_the_checkpoint_it_writes():
    thread = at_interrupt()

    result = engine.fork(thread, head(thread), None, as_node="__end__", metadata={"reason": "dup"})

    row = Checkpoint.objects.get(thread_id=thread.thread_id, checkpoint_id=result.checkpoint_id)
    assert row.metadata["reason"] == "dup"
    assert row.metadata["source"] == "update"
    assert row.metadata["as_node"] == "__end__"  # the history's own record, kept beside it
    # Closed without resuming: nothing pending, nothing next, the thread idle.
    assert engine.pending_interrupts(thread) == []
    assert engine.thread_state(thread).next == ()
    assert Thread.objects.get(pk=thread.pk).status == Thread.Status.IDLE


def test_graph_shape_names_nodes_reducers_and_what_follows_a_node():
    shape = engine.graph_shape(at_interrupt("parallel_review"))

    assert shape.nodes == ("__start__", "legal_review", "finance_review", "decide")
    assert shape.combined_keys == {"reviews"}
    assert set(shape.state_keys) == {"document", "reviews", "verdict"}
    assert shape.after(["legal_review", "finance_review"]) == ["decide"]
    assert shape.after(["__start__"]) == ["legal_review", "finance_review", "decide"]


def test_graph_shape_follows_command_destinations_and_loops():
    shape = engine.graph_shape(at_interrupt("email_reply"))
    # review goes back to draft_reply (a response), so it may run again itself.
    assert shape.after(["review"]) == ["draft_reply", "review", "send"]


# -- fork --------------------------------------------------------------------------------


def expense_checkpoints(thread) -> dict[int, str]:
    """The thread's checkpoint ids by step."""
    return {
        s.metadata["step"]: s.config["configurable"]["checkpoint_id"]
        for s in engine.thread_history(thread)
    }


def fork_url(thread, checkpoint_id) -> str:
    return reverse("fork", args=[thread.pk, checkpoint_id])


def test_the_fork_page_defaults_to_the_writer_and_explains_as_node(client):
    thread = at_interrupt()
    page = client.get(fork_url(thread, head(thread))).content.decode()
    assert '<option value="validate" selected>validate (wrote this checkpoint)' in page
    assert "is the node this update counts as" in page
    assert "so what runs next is what LangGraph decides after that node" in page
    assert 'name="state-amount"' in page and "42.5" in page
    assert '<button type="submit" name="run_after" value="on">Fork and run</button>' in page


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"as_node": "nope"}, "as_node", "as_node: nope is not a node of this graph"),
        ({"state-amount": "{12"}, "state-amount", "amount: the value is not valid JSON"),
        ({"reason": ""}, "reason", "Say why you fork"),
        # The graph's own router cannot take this update (validate's edge reads problems).
        ({"as_node": "validate", "step": 0}, None, "The graph could not apply this update"),
    ],
)
def test_a_refused_fork_names_the_field_and_changes_nothing(client, data, field, message):
    thread = at_interrupt()
    checkpoint = expense_checkpoints(thread)[data.pop("step", 1)]
    before = everything()
    form = {"as_node": "validate", "reason": "test", "run_after": "on", **data}

    response = client.post(fork_url(thread, checkpoint), form)

    assert response.status_code == 400
    page = response.content.decode()
    assert message in page
    if field:
        assert f'id="{field}-errors"' in page
    assert everything() == before


def test_a_foreign_or_unknown_checkpoint_is_a_404_naming_checkpoint_id(client):
    thread, other = at_interrupt(), at_interrupt()
    before = everything()
    for checkpoint in (head(other), "no-such-checkpoint"):
        for url in (fork_url(thread, checkpoint), reverse("replay", args=[thread.pk, checkpoint])):
            assert client.get(url).status_code == 404
            response = client.post(url, {"as_node": "validate", "reason": "x"})
            assert response.status_code == 404
            assert "<strong>checkpoint_id</strong>" in response.content.decode()
    assert everything() == before


def test_a_fork_without_a_run_sends_only_the_changed_keys_with_its_reason(client):
    thread = at_interrupt("parallel_review")
    # The first checkpoint after the input: both reviews pending, no review yet.
    checkpoint = expense_checkpoints(thread)[0]
    review = {"reviewer": "legal", "approved": True, "comment": "seen"}

    response = client.post(
        fork_url(thread, checkpoint),
        {
            "as_node": "legal_review",
            "reason": "Legal approved by phone",
            "state-document": '"Lease"',  # unchanged: not sent
            "state-reviews": json.dumps([review]),  # a reducer: added
        },
    )

    assert response.status_code == 303
    assert response["Location"] == reverse("thread", args=[thread.pk])
    state = engine.thread_state(thread)
    assert state.values["reviews"] == [review]
    assert state.metadata["reason"] == "Legal approved by phone"
    assert state.metadata["source"] == "update"
    assert Run.objects.count() == 0


# -- replay --------------------------------------------------------------------------------


def test_the_replay_page_lists_what_runs_again_and_warns(client):
    thread = at_interrupt()
    page = client.get(reverse("replay", args=[thread.pk, head(thread)])).content.decode()
    assert "First: <code>request_approval</code>" in page
    assert "<code>validate</code>, <code>pay</code>, <code>reject</code>" in page
    assert "LLM calls, tools, payments or emails happen again" in page
    assert "1 interrupt was pending here; it fires again" in page


def test_a_replay_needs_a_reason(client):
    thread = at_interrupt()
    before = everything()
    response = client.post(reverse("replay", args=[thread.pk, head(thread)]), {"reason": " "})
    assert response.status_code == 400
    assert "Say why you replay" in response.content.decode()
    assert everything() == before


# -- forks and replays that run, executed by the session's worker ------------------------


def test_a_fork_that_runs_goes_on_from_the_changed_state(client, worker):
    thread = at_interrupt()
    step0 = expense_checkpoints(thread)[0]  # written by __start__; validate is next
    run = posted_run(
        client.post(
            fork_url(thread, step0),
            {
                "as_node": "validate",
                "reason": "Amount corrected by finance",
                "state-amount": "5",
                "state-problems": "[]",
                "run_after": "on",
            },
        )
    )
    assert run.kind == Run.Kind.FORK and run.forked_from == step0
    assert run.metadata == {"reason": "Amount corrected by finance"}
    # As if validate had passed the new amount: the approval is asked for 5.
    assert run.status == Run.Status.INTERRUPTED
    [pending] = engine.pending_interrupts(thread)
    assert pending.value["action_requests"][0]["args"]["amount"] == 5


def test_a_replay_runs_again_and_its_interrupt_fires_again(client, worker):
    thread = at_interrupt()
    checkpoint = head(thread)
    run = posted_run(
        client.post(reverse("replay", args=[thread.pk, checkpoint]), {"reason": "Flaky approval"})
    )
    assert run.kind == Run.Kind.REPLAY and run.checkpoint_id == checkpoint
    assert run.metadata == {"reason": "Flaky approval"}
    assert run.status == Run.Status.INTERRUPTED
