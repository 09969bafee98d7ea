"""DjangoSaver beyond the conformance suite: limits, LangGraph parity, and async."""

from __future__ import annotations

import asyncio
import re

import pytest
from langgraph.checkpoint.base import empty_checkpoint, writes_sort_key
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres.base import BasePostgresSaver
from langgraph.types import Command

from durable import db
from durable.models import Checkpoint, CheckpointBlob
from durable.persistence.checkpoint import DjangoSaver, statements
from examples import expense_approval, parallel_review

pytestmark = pytest.mark.django_db(transaction=True)


def config(thread_id: str, **extra) -> dict:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": "", **extra}}


def put(saver, thread_id, metadata=None, parent=None, values=None, versions=None):
    cp = empty_checkpoint()
    cp["channel_values"] = values or {}
    cp["channel_versions"] = versions or {}
    cfg = parent or config(thread_id)
    return saver.put(cfg, cp, metadata or {"source": "loop", "step": 0}, versions or {})


def snapshot_view(graph, cfg):
    """What an operator reads of a thread: every checkpoint's values, next, step and
    source, and the pending interrupts' values."""
    return [
        (
            s.values,
            s.next,
            s.metadata["step"],
            s.metadata["source"],
            [i.value for i in s.interrupts],
        )
        for s in graph.get_state_history(cfg)
    ]


@pytest.mark.parametrize(
    ("module", "start", "answer"),
    [
        (expense_approval, expense_approval.EXAMPLE_INPUT, {"decisions": [{"type": "approve"}]}),
        (parallel_review, parallel_review.EXAMPLE_INPUT, {"approved": True}),
    ],
)
def test_graphs_behave_as_on_langgraphs_in_memory_saver(module, start, answer):
    views = []
    for saver in (DjangoSaver(), InMemorySaver()):
        graph = module.build_graph().compile(checkpointer=saver)
        cfg = {"configurable": {"thread_id": f"parity-{module.__name__}"}}
        graph.invoke(start, cfg)
        pending = graph.get_state(cfg).interrupts
        graph.invoke(Command(resume={i.id: answer for i in pending}), cfg)
        views.append(snapshot_view(graph, cfg))
    ours, reference = views
    assert ours == reference
    assert len(ours) >= 4


def test_thread_ids_over_255_characters_are_refused():
    saver = DjangoSaver()
    with pytest.raises(ValueError, match="limit is 255"):
        put(saver, "x" * 256)
    with pytest.raises(ValueError, match="limit is 255"):
        saver.get_tuple(config("x" * 256))
    assert Checkpoint.objects.count() == 0
    stored = put(saver, "y" * 255)
    assert saver.get_tuple(stored).config["configurable"]["thread_id"] == "y" * 255


@pytest.mark.parametrize(
    "thread_id", ["Ünïcødé ☃", "a/b/../c", "#frag?q=1", "with space", "Case", "case"]
)
def test_unusual_thread_ids_stay_isolated(thread_id):
    saver = DjangoSaver()
    for other in ("Case", "case", "a/b", "plain"):
        if other != thread_id:
            put(saver, other, metadata={"source": "loop", "step": 0, "owner": other})
    put(saver, thread_id, metadata={"source": "loop", "step": 0, "owner": thread_id})
    [only] = saver.list(config(thread_id))
    assert only.metadata["owner"] == thread_id
    saver.delete_thread(thread_id)
    assert saver.get_tuple(config(thread_id)) is None
    assert Checkpoint.objects.exclude(thread_id=thread_id).count() >= 3


def test_metadata_filter_takes_keys_literally():
    saver = DjangoSaver()
    put(saver, "t", metadata={"source": "loop", "step": 1, "a__b": "x", "nested": {"k": [1]}})
    put(saver, "t", metadata={"source": "loop", "step": 2, "a": {"b": "x"}})
    assert [t.metadata["step"] for t in saver.list(None, filter={"a__b": "x"})] == [1]
    assert [t.metadata["step"] for t in saver.list(None, filter={"nested": {"k": [1]}})] == [1]
    assert list(saver.list(None, filter={"a__b": "y"})) == []


def test_list_limit_zero_and_negative():
    saver = DjangoSaver()
    put(saver, "t")
    assert list(saver.list(config("t"), limit=0)) == []
    with pytest.raises(ValueError, match="limit"):
        list(saver.list(config("t"), limit=-1))


def test_list_pages_through_more_than_one_page_newest_first():
    saver = DjangoSaver()
    parent = None
    ids = []
    for step in range(230):
        parent = put(saver, "long", metadata={"source": "loop", "step": step}, parent=parent)
        ids.append(parent["configurable"]["checkpoint_id"])
    listed = [t.config["configurable"]["checkpoint_id"] for t in saver.list(config("long"))]
    assert listed == ids[::-1]
    before = {"configurable": {"checkpoint_id": ids[100]}}
    limited = list(saver.list(config("long"), before=before, limit=150))
    assert [t.metadata["step"] for t in limited] == list(range(99, -1, -1))


def test_blobs_are_written_only_for_new_versions():
    saver = DjangoSaver()
    values = {"messages": ["hi"], "count": 1}
    first = put(saver, "b", values=values, versions={"messages": "1", "count": "1"})
    cp = empty_checkpoint()
    cp["channel_values"] = {"messages": ["hi"], "count": 2}
    cp["channel_versions"] = {"messages": "1", "count": "2"}
    second = saver.put(first, cp, {"source": "loop", "step": 1}, {"count": "2"})
    # "messages" did not change: still one blob; "count" is a primitive, kept inline.
    assert list(CheckpointBlob.objects.values_list("channel", "version")) == [("messages", "1")]
    assert saver.get_tuple(second).checkpoint["channel_values"] == {"messages": ["hi"], "count": 2}


def test_next_version_has_postgres_savers_format():
    ours = DjangoSaver().get_next_version
    theirs = lambda current: BasePostgresSaver.get_next_version(None, current, None)  # noqa: E731
    shape = re.compile(r"^\d{32}\.\d+(\.\d+)?(e-\d+)?$")
    for current in (None, 7, ours(None), theirs(None)):
        mine, reference = ours(current), theirs(current)
        assert shape.match(mine) and shape.match(reference)
        assert mine.split(".")[0] == reference.split(".")[0]
        if isinstance(current, str):
            assert mine > current


def test_async_methods_do_not_block_the_event_loop():
    saver = DjangoSaver()

    async def main():
        ticks = 0
        stop = asyncio.Event()

        async def ticker():
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        cp = empty_checkpoint()
        observed = {}
        before = ticks
        stored = await saver.aput(config("async"), cp, {"source": "input", "step": -1}, {})
        observed["aput"] = ticks - before
        before = ticks
        await saver.aget_tuple(stored)
        observed["aget_tuple"] = ticks - before
        before = ticks
        [item async for item in saver.alist(config("async"))]
        observed["alist"] = ticks - before
        stop.set()
        await task
        return observed

    observed = asyncio.run(main())
    # The loop kept running other tasks while each call did its database work.
    assert all(n > 0 for n in observed.values()), observed


@pytest.mark.parametrize(
    ("stored", "query"),
    [
        ({"0": "a"}, {"0": "a"}),
        ({"2024": "x"}, {"2024": "x"}),
        ({"-1": "a"}, {"-1": "a"}),
        ({'say "hi"': 1}, {'say "hi"': 1}),
        ({"a.b": True}, {"a.b": True}),
        ({"n": {"a": 1, "b": [1, {"c": None}]}}, {"n": {"b": [1, {"c": None}], "a": 1}}),
        ({"score": 2.0}, {"score": 2}),
        ({"none": None}, {"none": None}),
    ],
)
def test_metadata_filter_matches_any_key_and_json_value(stored, query):
    saver = DjangoSaver()
    put(saver, "match", metadata={"source": "loop", "step": 0, **stored})
    put(saver, "other", metadata={"source": "loop", "step": 0, "n": {"a": 2}, "0": "b"})
    found = list(saver.list(None, filter=query))
    assert [t.config["configurable"]["thread_id"] for t in found] == ["match"]


def test_metadata_filter_values_of_another_type_do_not_match():
    saver = DjangoSaver()
    put(saver, "t", metadata={"source": "loop", "step": 1, "flag": True, "name": "1"})
    for query in ({"step": "1"}, {"flag": 1}, {"name": 1}, {"missing": None}):
        assert list(saver.list(None, filter=query)) == [], query


def test_pending_writes_follow_langgraphs_sort_key_not_the_collation():
    saver = DjangoSaver()
    stored = put(saver, "order")
    for path, task in (("~zeta", "t3"), ("Zeta", "t1"), ("alpha", "t2"), ("éclair", "t4")):
        saver.put_writes(stored, [("ch", path), ("ch2", path)], task, task_path=path)
    writes = saver.get_tuple(stored).pending_writes
    expected = sorted(
        [
            (t, c, p)
            for p, t in (("~zeta", "t3"), ("Zeta", "t1"), ("alpha", "t2"), ("éclair", "t4"))
            for c in ("ch", "ch2")
        ],
        key=lambda w: writes_sort_key(w[2], w[0], 0 if w[1] == "ch" else 1),
    )
    assert writes == expected
    assert [w[2] for w in writes[::2]] == ["Zeta", "alpha", "~zeta", "éclair"]


def test_reading_a_checkpoint_reads_only_its_own_blobs():
    saver = DjangoSaver()
    big = "x" * 1000
    first = put(saver, "blobs", values={"a": [big], "b": ["small"]}, versions={"a": "1", "b": "1"})
    cp = empty_checkpoint()
    cp["channel_values"] = {"a": [big + "y"], "b": ["small"]}
    cp["channel_versions"] = {"a": "2", "b": "1"}
    second = saver.put(first, cp, {"source": "loop", "step": 1}, {"a": "2"})
    # The second checkpoint needs a@2 and b@1. A "channel IN (a, b) AND version IN (1, 2)"
    # read would also fetch the bytes of a@1, which it does not need. The saver reads a
    # checkpoint's blobs with this one statement, on its channel_versions.
    needed = set(saver.get_tuple(second).checkpoint["channel_versions"].items())
    query = statements.blobs_and_writes("default", "blobs", "", needed, [])
    with db.cursor("default") as cursor:
        cursor.execute(*query)
        read = {(channel, version) for _, channel, version, *_ in cursor.fetchall()}
    assert read == needed == {("a", "2"), ("b", "1")}
    assert saver.get_tuple(second).checkpoint["channel_values"] == {
        "a": [big + "y"],
        "b": ["small"],
    }
