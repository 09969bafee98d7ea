"""The fork form says what LangGraph will really run after the update, for each as_node,
and refuses a fork-and-run that would run nothing; the preview writes nothing.

expense_approval's ``request_approval`` routes with ``Command(goto=...)`` and has no
edges of its own: an update as that node, without a goto, leaves no next task.
"""

from __future__ import annotations

import pytest
from django.urls import reverse
from langgraph.types import Command

from durable import engine
from durable.graphs import get_graph
from durable.models import Checkpoint, Thread
from tests.helpers.retention import history
from tests.helpers.threads import at_interrupt, everything

pytestmark = pytest.mark.django_db(transaction=True)

NOTHING = "nothing would run; the thread would end here"


def finished() -> Thread:
    """An expense_approval thread approved and paid, in this process."""
    thread = at_interrupt()
    approve = Command(resume={"decisions": [{"type": "approve"}]})
    get_graph("expense_approval").invoke(approve, engine.config_for(thread))
    assert engine.thread_state(thread).values["status"] == "paid"
    return thread


def at_step(thread: Thread, step: int) -> str:
    [found] = [s for s in engine.thread_history(thread) if s.metadata["step"] == step]
    return found.config["configurable"]["checkpoint_id"]


def fork_url(thread: Thread, checkpoint_id: str) -> str:
    return reverse("fork", args=[thread.pk, checkpoint_id])


def row(page: str, node: str) -> str:
    """The cell of ``node``'s row in the fork page's table of what runs next."""
    start = page.index(f"<tr><td><code>{node}</code></td><td>")
    return page[start : page.index("</tr>", start)]


@pytest.mark.parametrize("as_node", ["validate", "request_approval", "pay", "__start__"])
def test_the_preview_is_what_the_fork_then_has_next_and_writes_nothing(as_node):
    thread = finished()
    step_1 = at_step(thread, 1)
    before = everything()

    preview = engine.next_after_update(thread, step_1, None, as_node=as_node)

    assert everything() == before
    forked = engine.fork(thread, step_1, None, as_node=as_node)
    assert engine.state_at(thread, forked.checkpoint_id).next == preview
    expected = {"validate": ("request_approval",), "__start__": ("validate",)}
    assert preview == expected.get(as_node, ())


@pytest.mark.usefixtures("retention_graphs")
@pytest.mark.parametrize(
    ("n", "expected"), [(3, ("tick",)), (5, ("left", "right")), (8, ("review",))]
)
def test_the_preview_of_an_update_of_a_delta_channel_writes_nothing(n, expected):
    # An update of a DeltaChannel saves its writes on the checkpoint it builds on: the
    # sandbox keeps them, and the router, which reads n, decides the same.
    thread = history("retention_delta", steps=8)
    [past] = [s for s in engine.thread_history(thread, 100) if s.metadata["step"] == 4]
    checkpoint = past.config["configurable"]["checkpoint_id"]
    values = {"n": n, "log": ["edited"]}
    before = everything()

    preview = engine.next_after_update(thread, checkpoint, values, as_node="tick")

    assert everything() == before
    assert preview == expected
    forked = engine.fork(thread, checkpoint, values, as_node="tick")
    assert engine.state_at(thread, forked.checkpoint_id).next == preview


def test_the_fork_form_shows_the_real_next_of_each_as_node(client):
    thread = finished()
    before = everything()

    page = client.get(fork_url(thread, at_step(thread, 1))).content.decode()

    assert NOTHING in row(page, "request_approval")
    assert "<code>pay</code>" not in row(page, "request_approval")  # not the drawing's edges
    assert "<code>request_approval</code>" in row(page, "validate")
    assert NOTHING not in row(page, "validate")
    assert ">request_approval (nothing would run)</option>" in page
    # The form starts at validate (it wrote step 1), which leads on: no warning yet.
    assert 'id="as-node-ends"' not in page
    assert everything() == before


def test_a_fork_and_run_that_would_run_nothing_is_refused_on_the_form(client):
    thread = finished()
    checkpoint = at_step(thread, 1)
    before = everything()

    response = client.post(
        fork_url(thread, checkpoint),
        {"as_node": "request_approval", "reason": "retry", "run_after": "on"},
    )

    assert response.status_code == 400
    page = response.content.decode()
    errors = page[page.index('id="as_node-errors"') :]
    assert f"With as_node &#x27;request_approval&#x27;, {NOTHING}" in errors[: errors.index("</")]
    assert f"With as_node <code>request_approval</code>, {NOTHING}." in page
    assert everything() == before


def test_a_fork_that_ends_the_thread_is_made_when_no_run_is_asked(client):
    thread = finished()
    checkpoint = at_step(thread, 1)

    response = client.post(
        fork_url(thread, checkpoint), {"as_node": "request_approval", "reason": "close it"}
    )

    assert response.status_code == 303
    assert not thread.runs.exists()
    newest = Checkpoint.objects.filter(thread_id=thread.thread_id).order_by("-checkpoint_id")[0]
    assert newest.parent_checkpoint_id == checkpoint
    assert engine.thread_state(thread).next == ()
    assert Thread.objects.get(pk=thread.pk).status == Thread.Status.IDLE


def test_a_refused_form_previews_the_submitted_values_for_the_chosen_node(client):
    thread = at_interrupt()
    checkpoint = at_step(thread, 1)
    # A problem written as validate: its router (which reads problems) then ends.
    form = {"as_node": "validate", "state-problems": '["too much"]', "reason": ""}

    page = client.post(fork_url(thread, checkpoint), form).content.decode()

    assert "(with the values submitted)" in page
    assert NOTHING in row(page, "validate")
    assert f"With as_node <code>validate</code>, {NOTHING}." in page


def test_the_preview_of_an_update_that_runs_nothing_says_fork_and_run_is_refused(client):
    thread = finished()
    checkpoint = at_step(thread, 1)
    form = {"as_node": "request_approval", "reason": ""}

    # The refusal the preview gives is the fork's own, word for word.
    preview = engine.preview_fork(thread, checkpoint, None, as_node="request_approval")
    with pytest.raises(engine.InvalidRequest) as refused:
        engine.fork(thread, checkpoint, None, as_node="request_approval", run=True)
    assert preview.run_refused == refused.value.message
    response = client.post(
        reverse("fork-preview", args=[thread.pk, checkpoint]), form, HTTP_HX_REQUEST="true"
    )

    page = response.content.decode()
    warning = page[page.index('data-testid="preview-run-refused"') :]
    warning = warning[: warning.index("</p>")]
    assert "“Fork and run” would be refused" in warning
    assert "“Only add the checkpoint”" in warning
    assert "nothing would run; the thread would end here" in warning
    # The button, swapped out of band beside the form, says so too.
    assert 'name="run_after" value="on" disabled' in page
    assert engine.preview_fork(thread, checkpoint, None, as_node="validate").run_refused == ""
    ok = client.post(
        reverse("fork-preview", args=[thread.pk, checkpoint]),
        {**form, "as_node": "validate"},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert "preview-run-refused" not in ok
    assert 'name="run_after" value="on">' in ok


def test_the_input_checkpoint_offers_the_as_node_langgraph_infers_and_previews_it(client):
    thread = finished()
    step_input = at_step(thread, -1)
    # What LangGraph's own update_state does there when given no as_node, on a copy.
    copy = engine.create_thread("expense_approval")
    compiled = get_graph("expense_approval")
    compiled.invoke(dict(engine.state_at(thread, step_input).values), engine.config_for(copy))
    base = {"configurable": {**engine.config_for(copy)["configurable"]}}
    [copy_input] = [s for s in compiled.get_state_history(base) if s.metadata["step"] == -1]
    inferred = compiled.get_state(compiled.update_state(copy_input.config, {"amount": 7}))
    before = everything()

    page = client.get(fork_url(thread, step_input)).content.decode()

    assert '<option value="__start__" selected>' in page
    # The preview is computed at once, for that as_node, without a choice being made.
    runs_next = 'data-testid="preview-next">Runs next (as <code>__start__</code>): '
    assert runs_next + "".join(f"<code>{n}</code> " for n in inferred.next) in page
    assert inferred.next == engine.next_after_update(
        thread, step_input, {"amount": 7}, as_node="__start__"
    )
    assert everything() == before
