"""DeltaChannel threads: history rebuilt from ancestors' writes, and pruning that keeps
what the survivors depend on (a keep_latest that kept the newest checkpoint alone would
lose the ancestors' writes a DeltaChannel's value is rebuilt from)."""

from __future__ import annotations

from typing import Annotated

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from durable.models import Checkpoint
from durable.persistence.checkpoint import DjangoSaver

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = 50


def concat(state: list, batches: list) -> list:
    return state + [item for batch in batches for item in batch]


class State(TypedDict):
    n: int
    log: Annotated[list, DeltaChannel(concat, snapshot_frequency=3)]


def build(saver):
    def tick(state: State) -> dict:
        return {"n": state["n"] + 1, "log": [f"tick {state['n'] + 1}"]}

    def left(state: State) -> dict:
        return {"log": [f"left {state['n']}"]}

    def right(state: State) -> dict:
        return {"log": [f"right {state['n']}"]}

    def review(state: State) -> dict:
        answer = interrupt({"question": f"accept {len(state['log'])} entries?"})
        return {"log": [f"review: {answer}"]}

    def route(state: State) -> list[str] | str:
        if state["n"] >= STEPS:
            return "review"
        return ["left", "right"] if state["n"] % 10 == 0 else "tick"

    builder = StateGraph(State)
    for name, fn in (("tick", tick), ("left", left), ("right", right), ("review", review)):
        builder.add_node(name, fn)
    builder.add_edge(START, "tick")
    builder.add_conditional_edges("tick", route, ["tick", "left", "right", "review"])
    builder.add_edge("left", "tick")
    builder.add_edge("right", "tick")
    builder.add_edge("review", END)
    return builder.compile(checkpointer=saver)


CONFIG = {"configurable": {"thread_id": "delta"}, "recursion_limit": 500}


def view(graph):
    state = graph.get_state(CONFIG)
    return state.values, state.next, [i.value for i in state.interrupts]


def run_to_interrupt(saver):
    graph = build(saver)
    graph.invoke({"n": 0, "log": []}, CONFIG)
    return graph


def test_delta_thread_reads_as_on_in_memory_saver_and_survives_keep_latest():
    reference = run_to_interrupt(InMemorySaver())
    ours_saver = DjangoSaver()
    ours = run_to_interrupt(ours_saver)
    expected = view(reference)
    assert len(expected[0]["log"]) > STEPS  # ticks plus the parallel writes
    assert expected[1] == ("review",)
    assert view(ours) == expected

    before = Checkpoint.objects.filter(thread_id="delta").count()
    ours_saver.prune(["delta"], strategy="keep_latest")
    after = Checkpoint.objects.filter(thread_id="delta").count()

    assert 1 < after < before / 10  # the chain back to the last snapshot, no more
    assert view(build(DjangoSaver())) == expected
    # The pruned thread still resumes like the reference.
    reference.invoke(Command(resume="yes"), CONFIG)
    resumed = build(DjangoSaver())
    resumed.invoke(Command(resume="yes"), CONFIG)
    assert view(resumed) == view(reference)


def test_delta_history_is_read_in_a_bounded_number_of_queries():
    saver = DjangoSaver()
    run_to_interrupt(saver)
    latest = saver.get_tuple(CONFIG)
    with CaptureQueriesContext(connection) as queries:
        history = saver.get_delta_channel_history(config=latest.config, channels=["log"])
    # target, chain, blob keys, writes, seed blob keys and values: not one per ancestor.
    assert len(queries) <= 7, [q["sql"][:80] for q in queries]
    base = super(DjangoSaver, saver).get_delta_channel_history(
        config=latest.config, channels=["log"]
    )
    assert history == base
    assert "seed" in history["log"]


def test_keep_latest_without_delta_channels_keeps_one_checkpoint_per_namespace():
    saver = DjangoSaver()
    graph = build(saver)
    graph.invoke({"n": 0, "log": []}, CONFIG)
    plain = {"configurable": {"thread_id": "plain", "checkpoint_ns": ""}}
    from langgraph.checkpoint.base import empty_checkpoint

    parent = plain
    for step in range(5):
        cp = empty_checkpoint()
        cp["channel_values"] = {"v": [step]}
        cp["channel_versions"] = {"v": str(step + 1)}
        parent = saver.put(parent, cp, {"source": "loop", "step": step}, {"v": str(step + 1)})
    saver.prune(["plain"], strategy="keep_latest")
    [kept] = saver.list(plain)
    assert kept.checkpoint["channel_values"] == {"v": [4]}
    assert kept.parent_config is None
    from durable.models import CheckpointBlob

    assert list(
        CheckpointBlob.objects.filter(thread_id="plain").values_list("version", flat=True)
    ) == ["5"]
