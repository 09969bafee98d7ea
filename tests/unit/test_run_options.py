"""The rules of a run's options that need no worker: what ``durable.engine.options`` keeps
or refuses, and how a delayed run is held by the claim (``records.claim``) and the outbox
(``queue.unsent``), on rows written by hand."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from langgraph.types import StateSnapshot

from durable.engine import InvalidRequest, queue, records
from durable.engine.options import command_for, graph_options
from durable.graphs import get_graph
from durable.models import Run, Tenant, Thread

pytestmark = pytest.mark.django_db(transaction=True)

LEASE = 30.0


@pytest.fixture
def thread() -> Thread:
    return Thread.objects.create(
        tenant=Tenant.default(), thread_id="later", name="later", graph="options"
    )


def delayed(thread: Thread, starts_in: float, sent_ago: float | None = None) -> Run:
    now = timezone.now()
    return Run.objects.create(
        thread=thread,
        graph=thread.graph,
        kind=Run.Kind.START,
        input={},
        not_before=now + timedelta(seconds=starts_in),
        dispatched_at=None if sent_ago is None else now - timedelta(seconds=sent_ago),
    )


def test_a_delayed_run_is_not_claimed_before_its_time_and_is_after(thread):
    run = delayed(thread, starts_in=60, sent_ago=0)
    early, claimed = records.claim(run.pk, "w1", LEASE)
    assert not claimed and early.status == "pending"
    # Its message is used up: the outbox sends it again.
    assert early.dispatched_at is None
    Run.objects.filter(pk=run.pk).update(not_before=timezone.now() - timedelta(seconds=1))
    due, claimed = records.claim(run.pk, "w1", LEASE)
    assert claimed and due.status == "running"


def test_a_delayed_runs_message_waiting_for_its_time_is_not_lost(settings):
    settings.DURABLE_RUN_LEASE_SECONDS = LEASE

    def thread(name):
        return Thread.objects.create(
            tenant=Tenant.default(), thread_id=name, name=name, graph="options"
        )

    delayed(thread("waits"), starts_in=3600, sent_ago=LEASE + 1)
    delayed(thread("never-sent"), starts_in=3600)
    delayed(thread("lost-after-its-time"), starts_in=-(LEASE + 1), sent_ago=2 * LEASE)
    delayed(thread("just-due"), starts_in=-1, sent_ago=2 * LEASE)

    found = queue.unsent(timezone.now())
    assert sorted(found.values_list("thread__name", flat=True)) == [
        "lost-after-its-time",
        "never-sent",
    ]


def test_config_keeps_the_callers_keys_but_not_those_naming_threads_and_checkpoints():
    kept = graph_options(
        get_graph("options"),
        config={
            "configurable": {
                "x": 1,
                "thread_id": "theirs",
                "checkpoint_id": "c",
                "checkpoint_ns": "n",
                "checkpoint_map": {},
                "run_id": "r",
                "__pregel_checkpointer": "x",
            },
            "tags": ["a"],
            "recursion_limit": 5,
        },
    )
    assert kept["config"] == {"configurable": {"x": 1}, "tags": ["a"], "recursion_limit": 5}
    assert kept["not_before"] is None and kept["webhook"] == ""


def test_breakpoints_context_and_webhooks_are_checked(settings):
    graph = get_graph("options")
    assert graph_options(graph, interrupt_before="*")["interrupt_before"] == "*"
    assert graph_options(graph, interrupt_after=["read"])["interrupt_after"] == ["read"]
    with pytest.raises(InvalidRequest) as refused:
        graph_options(graph, interrupt_after=["read", "nope"])
    assert refused.value.field == "interrupt_after" and "'nope'" in refused.value.message

    assert graph_options(graph, context={"user": "ada"})["context"] == {"user": "ada"}
    with pytest.raises(InvalidRequest) as refused:
        graph_options(graph, context={"role": "admin"})  # not a field of the context schema
    assert refused.value.field == "context"
    # LangGraph would build the dataclass with the wrong type; the graph would see 5.
    with pytest.raises(InvalidRequest) as refused:
        graph_options(graph, context={"user": 5})
    assert refused.value.field == "context.user" and "valid string" in refused.value.message

    settings.DURABLE_WEBHOOK_ALLOWED_HOSTS = ["hooks.example.com"]
    url = "https://Hooks.Example.com:8443/done"
    assert graph_options(graph, webhook=url)["webhook"] == url
    for bad in ("https://other.example.com/", "file:///etc/passwd", "/relative", "http://:80"):
        with pytest.raises(InvalidRequest) as refused:
            graph_options(graph, webhook=bad)
        assert refused.value.field == "webhook", bad
    settings.DURABLE_WEBHOOK_ALLOWED_HOSTS = []
    with pytest.raises(InvalidRequest, match="DURABLE_WEBHOOK_ALLOWED_HOSTS"):
        graph_options(graph, webhook=url)


def state(next_: tuple = (), interrupts: tuple = ()) -> StateSnapshot:
    return StateSnapshot({}, next_, {}, {}, None, None, (), interrupts)


def test_a_command_resumes_goes_to_and_updates_when_something_would_run():
    graph = get_graph("options")
    at_breakpoint = state(next_=("ask",))
    assert command_for(graph, at_breakpoint, "t", "yes") == {"resume": "yes"}
    with pytest.raises(InvalidRequest) as refused:
        command_for(graph, at_breakpoint, "t", answers={"some-id": "yes"})
    assert refused.value.field == "answers"

    done = state()
    with pytest.raises(InvalidRequest) as refused:
        command_for(graph, done, "t", "yes")
    assert refused.value.field == "resume" and "no pending interrupt" in refused.value.message
    # goto runs something whatever the state; END is taken (Agent Chat UI sends it).
    assert command_for(graph, done, "t", goto="__end__") == {"goto": "__end__"}
    sends = [{"node": "pick", "input": {"topic": "x"}}, "finish"]
    assert command_for(graph, done, "t", "v", goto=sends, update=[["topic", "y"]]) == {
        "resume": "v",
        "goto": sends,
        "update": [["topic", "y"]],
    }
    for goto in ("nope", [{"node": "pick", "extra": 1}], 5):
        with pytest.raises(InvalidRequest) as refused:
            command_for(graph, done, "t", goto=goto)
        assert refused.value.field == "goto", goto
    for update in ({"nope": 1}, "topic", [["topic"]]):
        with pytest.raises(InvalidRequest) as refused:
            command_for(graph, done, "t", update=update)
        assert refused.value.field == "update", update
