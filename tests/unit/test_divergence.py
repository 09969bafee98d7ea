"""Replay divergence (``durable.reports.divergence``): a branch replayed in this process,
as a worker replays it (input ``None`` from a past checkpoint's config), compared with
the branch it left. The graphs save through DjangoSaver from LangGraph's threads, on
their own connections, so these tests commit."""

from __future__ import annotations

import sys

import pytest
from django.urls import reverse

from durable import engine
from durable.graphs import get_graph
from durable.models import Run, Thread
from durable.reports.divergence import DIVERGED, NO_DIVERGENCE, NO_FORK, divergence
from tests.helpers.divergence_graphs import choose
from tests.helpers.threads import EXPENSE

committed = pytest.mark.django_db(transaction=True)


def ran(graph: str, values: dict, name: str) -> Thread:
    thread = engine.create_thread(graph, name=name)
    get_graph(graph).invoke(values, engine.config_for(thread), durability="sync")
    return thread


def before(thread: Thread, node: str) -> str:
    """The id of the checkpoint whose next task is ``node`` (the first such)."""
    for snapshot in engine.thread_history(thread, limit=100):
        if snapshot.next == (node,):
            return snapshot.config["configurable"]["checkpoint_id"]
    raise AssertionError(f"no checkpoint before {node}")


def replayed(thread: Thread, checkpoint_id: str) -> str:
    """Replay from ``checkpoint_id``; the new branch's newest checkpoint."""
    get_graph(thread.graph).invoke(
        None, engine.config_for(thread, checkpoint_id), durability="sync"
    )
    return engine.thread_state(thread).config["configurable"]["checkpoint_id"]


@committed
def test_a_coin_that_lands_on_the_other_side_diverges_where_it_was_tossed(tmp_path):
    choose(tmp_path, "heads")
    thread = ran("coin", {"dir": str(tmp_path)}, "coin-1")
    toss = before(thread, "toss")
    choose(tmp_path, "tails")
    head = replayed(thread, toss)

    report = divergence(thread, head)
    assert report.status == DIVERGED
    assert report.fork_point == toss
    assert report.matched == 0
    assert report.step == 1
    assert report.old.nodes == report.new.nodes == ["toss"]
    assert report.old.writes["toss"]["side"] == "heads"
    assert report.new.writes["toss"]["side"] == "tails"
    assert report.differs == ["writes"]
    paths = {c.path: (c.old, c.new) for c in report.changes}
    assert paths["writes.toss.side"] == ("heads", "tails")


@committed
def test_a_coin_that_lands_the_same_way_again_does_not_diverge(tmp_path):
    choose(tmp_path, "heads")
    thread = ran("coin", {"dir": str(tmp_path)}, "coin-2")
    head = replayed(thread, before(thread, "prepare"))
    report = divergence(thread, head)
    assert report.status == NO_DIVERGENCE
    assert [m["nodes"] for m in report.matched_steps] == [["prepare"], ["toss"], ["heads"]]
    assert report.step is None and report.changes == []


@committed
def test_a_steady_graph_replayed_does_not_diverge_and_a_later_step_can():
    thread = ran("steady", {"number": 3}, "steady-1")
    first = before(thread, "prepare")
    head = replayed(thread, first)
    report = divergence(thread, head)
    assert report.status == NO_DIVERGENCE
    assert report.fork_point == first
    assert report.matched == 3


@committed
def test_a_fork_diverges_at_its_update_and_its_own_run_after(tmp_path):
    thread = ran("steady", {"number": 3}, "steady-2")
    at = before(thread, "double")
    forked = engine.fork(thread, at, {"number": 10}, as_node="prepare")
    new = forked.config["configurable"]["checkpoint_id"]
    report = divergence(thread, new)
    assert report.status == DIVERGED
    assert report.step == 1
    assert report.new.update and report.new.nodes == ["prepare"]
    assert report.new.writes == {"prepare": {"number": 10}}
    assert report.old.nodes == ["double"]


@committed
def test_a_thread_never_replayed_has_no_fork_and_a_foreign_id_is_refused(tmp_path):
    thread = ran("steady", {"number": 3}, "steady-3")
    head = engine.thread_state(thread).config["configurable"]["checkpoint_id"]
    assert divergence(thread, head).status == NO_FORK
    with pytest.raises(engine.InvalidRequest) as refused:
        divergence(thread, "no-such-checkpoint")
    assert refused.value.field == "checkpoint_id"


# -- the console and the API --------------------------------------------------------------


def coin_replayed(tmp_path, name: str, second: str) -> tuple[Thread, str, str]:
    """A coin thread tossed heads, replayed from its toss landing on ``second``: the
    thread, the replayed checkpoint and the new branch's head."""
    choose(tmp_path, "heads")
    thread = ran("coin", {"dir": str(tmp_path)}, name)
    toss = before(thread, "toss")
    choose(tmp_path, second)
    return thread, toss, replayed(thread, toss)


@committed
def test_the_divergence_page_shows_the_first_divergent_step_and_what_differs(client, tmp_path):
    thread, toss, head = coin_replayed(tmp_path, "coin-page", "tails")
    url = reverse("thread-divergence", args=[thread.pk])
    page = client.get(url, {"checkpoint_id": head}).content.decode()
    assert 'data-status="diverged"' in page
    assert "Diverged at step 1" in page and "other values were written" in page
    assert "<code>writes.toss.side</code>" in page
    assert "&quot;heads&quot;" in page and "&quot;tails&quot;" in page
    assert toss in page  # the fork point, linked
    # Without an id: the thread's newest checkpoint, the new branch's head.
    assert 'data-status="diverged"' in client.get(url).content.decode()


@committed
def test_the_divergence_page_says_no_divergence_for_a_steady_replay(client):
    thread = ran("steady", {"number": 3}, "steady-page")
    replayed(thread, before(thread, "double"))
    page = client.get(reverse("thread-divergence", args=[thread.pk])).content.decode()
    assert 'data-status="no_divergence"' in page
    assert "No divergence" in page and "the 2 steps after the fork point" in page
    steps = page[page.index('data-testid="matched-steps"') :]
    assert steps.index("<code>double</code>") < steps.index("<code>finish</code>")


@committed
def test_a_bad_checkpoint_id_is_an_error_on_the_form_in_the_consoles_layout(client):
    thread = ran("steady", {"number": 3}, "steady-bad")
    url = reverse("thread-divergence", args=[thread.pk])
    for bad in ("nope", "x" * 65):
        answer = client.get(url, {"checkpoint_id": bad})
        page = answer.content.decode()
        assert answer.status_code == 400
        assert 'data-testid="divergence-errors"' in page
        assert "Checkpoint of the new branch:" in page
        assert 'aria-invalid="true"' in page and "<nav" in page


@committed
def test_the_api_reports_the_divergence_and_refuses_a_bad_checkpoint(tmp_path, api_key):
    from django.test import Client

    thread, toss, head = coin_replayed(tmp_path, "coin-api", "tails")
    api = Client(HTTP_X_API_KEY=api_key)
    url = f"/api/threads/{thread.name}/divergence"
    found = api.get(url, {"checkpoint_id": head}).json()
    assert found["status"] == "diverged" and found["step"] == 1
    assert found["fork_point"] == toss
    assert found["old"]["writes"]["toss"]["side"] == "heads"
    assert found["new"]["writes"]["toss"]["side"] == "tails"
    assert {"kind": "changed", "path": "writes.toss.side", "old": "heads", "new": "tails"} in (
        found["changes"]
    )
    refused = api.get(url, {"checkpoint_id": "nope"})
    assert refused.status_code == 422 and refused.json()["field"] == "checkpoint_id"
    missing = api.get(url)
    assert missing.status_code == 422 and missing.json()["field"] == "checkpoint_id"
    schema = api.get("/api/openapi.json").json()
    assert "/api/threads/{thread_id}/divergence" in schema["paths"]
    assert "DivergenceReport" in schema["components"]["schemas"]


@committed
def test_a_replay_runs_page_loads_its_divergence_box_which_waits_while_it_runs(client, tmp_path):
    choose(tmp_path, "heads")
    thread = ran("coin", {"dir": str(tmp_path)}, "coin-run")
    toss = before(thread, "toss")
    run = Run.objects.create(
        thread=thread, graph="coin", kind=Run.Kind.REPLAY, checkpoint_id=toss, status="running"
    )
    page = client.get(reverse("run", args=[run.pk])).content.decode()
    box_url = reverse("run-divergence", args=[run.pk])
    assert f'hx-get="{box_url}"' in page and 'hx-trigger="load"' in page
    htmx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "run-divergence"}
    waiting = client.get(box_url, **htmx).content.decode()
    assert "The run is still going" in waiting and 'hx-trigger="every 2s"' in waiting

    choose(tmp_path, "tails")
    config = engine.config_for(thread, toss) | {"metadata": {"run_id": str(run.pk)}}
    get_graph("coin").invoke(None, config, durability="sync")
    Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCESS)
    ended = client.get(box_url, **htmx).content.decode()
    assert 'data-status="diverged"' in ended and "hx-trigger" not in ended
    assert "<code>writes.toss.side</code>" in ended
    assert "<nav" not in ended  # the box alone, not a page
    # Without htmx: the divergence page of the run's branch.
    assert "Did the branch take another path?" in client.get(box_url).content.decode()


@committed
def test_a_start_runs_page_has_no_divergence_box(client):
    thread = ran("steady", {"number": 1}, "steady-run")
    run = Run.objects.create(thread=thread, graph="steady", kind=Run.Kind.START, status="success")
    assert 'id="run-divergence"' not in client.get(reverse("run", args=[run.pk])).content.decode()


@committed
def test_a_replay_waiting_at_the_interrupt_the_old_branch_answered_has_not_diverged():
    from langgraph.types import Command

    thread = engine.create_thread("expense_approval", name="expense-wait")
    graph = get_graph("expense_approval")
    graph.invoke(EXPENSE, engine.config_for(thread), durability="sync")
    approve = {"decisions": [{"type": "approve"}]}
    graph.invoke(Command(resume=approve), engine.config_for(thread), durability="sync")
    head = replayed(thread, before(thread, "request_approval"))
    assert engine.thread_state(thread).interrupts  # it fired again, and waits

    report = divergence(thread, head)
    assert report.status == NO_DIVERGENCE
    assert report.waiting and report.matched == 0


@committed
def test_the_comparison_is_bounded_and_says_so(tmp_path, monkeypatch):
    # The engine's package names its function ``divergence``, after this module.
    module = sys.modules["durable.reports.divergence"]
    thread = ran("steady", {"number": 3}, "steady-bounds")
    head = replayed(thread, before(thread, "prepare"))
    monkeypatch.setattr(module, "MAX_STEPS", 2)
    bounded = divergence(thread, head)
    assert bounded.status == NO_DIVERGENCE and bounded.matched == 2 and bounded.truncated
    monkeypatch.setattr(module, "MAX_CHECKPOINTS", 3)
    far = divergence(thread, head)
    assert far.status == NO_FORK and far.truncated


@committed
def test_a_later_run_on_the_old_branch_is_not_compared_with_the_replay():
    thread = ran("steady", {"number": 3}, "steady-twice")
    first = before(thread, "prepare")
    get_graph("steady").invoke({"number": 5}, engine.config_for(thread), durability="sync")
    head = replayed(thread, first)
    report = divergence(thread, head)
    assert report.status == NO_DIVERGENCE and report.matched == 3
    # The old branch is compared up to the end of its first run, not the second.
    assert engine.state_at(thread, report.old_head).values["log"] == ["prepared", "finished at 6"]
