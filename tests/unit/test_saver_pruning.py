"""The saver's public pruning API: ``DjangoSaver.prune`` (LangGraph's strategies, and
``keep_last=N``), its dry run ``prune_plan`` and ``count_rows``, on the real database
(SQLite, or PostgreSQL with ``DATABASE_URL``). A plan's counts are what the real prune
then removes; DeltaChannel threads read exactly as before after keeping their last N."""

from __future__ import annotations

import asyncio

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.types import Command

from durable.models import Checkpoint, CheckpointBlob, CheckpointWrite
from durable.persistence.checkpoint import Counts, DjangoSaver, PrunePlan
from tests.helpers.retention_graphs import RECURSION_LIMIT, build_delta, build_nested

pytestmark = pytest.mark.django_db(transaction=True)


def config(thread_id: str, checkpoint_id: str | None = None) -> dict:
    configurable = {"thread_id": thread_id}
    if checkpoint_id:
        configurable.update(checkpoint_ns="", checkpoint_id=checkpoint_id)
    return {"configurable": configurable, "recursion_limit": RECURSION_LIMIT}


def plain(saver: DjangoSaver, thread_id: str, steps: int = 5) -> list[str]:
    """``steps`` checkpoints by hand: channel ``a`` changes every step (a new blob each),
    ``b`` keeps the version of the first (one blob all share), two writes on each.
    Returns the checkpoint ids, oldest first."""
    parent = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    ids = []
    for step in range(steps):
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"a": [step], "b": ["shared"]}
        checkpoint["channel_versions"] = {"a": str(step + 1), "b": "1"}
        new = {"a": str(step + 1), "b": "1"} if step == 0 else {"a": str(step + 1)}
        parent = saver.put(parent, checkpoint, {"source": "loop", "step": step}, new)
        saver.put_writes(parent, [("a", [step]), ("b", ["w"])], task_id=f"task-{step}")
        ids.append(parent["configurable"]["checkpoint_id"])
    return ids


def run_graph(builder, thread_id: str, inputs: dict):
    graph = builder.compile(checkpointer=DjangoSaver())
    graph.invoke(inputs, config(thread_id))
    return graph


def view(graph, cfg: dict):
    """What a reader of the checkpoint sees: values, next, interrupts, and each
    subgraph task's own state."""
    state = graph.get_state(cfg, subgraphs=True)
    return (
        state.values,
        state.next,
        [i.value for i in state.interrupts],
        [(t.name, t.state.values if t.state else None) for t in state.tasks],
    )


def root_ids(thread_id: str) -> list[str]:
    return list(
        Checkpoint.objects.filter(thread_id=thread_id, checkpoint_ns="")
        .order_by("-checkpoint_id")
        .values_list("checkpoint_id", flat=True)
    )


def orm_counts(thread_id: str) -> Counts:
    return Counts(
        Checkpoint.objects.filter(thread_id=thread_id).count(),
        CheckpointBlob.objects.filter(thread_id=thread_id).count(),
        CheckpointWrite.objects.filter(thread_id=thread_id).count(),
    )


def orphans(thread_id: str) -> tuple[set, set, set]:
    """Writes of no checkpoint, blobs no checkpoint uses, parents that do not exist."""
    rows = list(
        Checkpoint.objects.filter(thread_id=thread_id).values_list(
            "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "channel_versions"
        )
    )
    ids = {(ns, cid) for ns, cid, _, _ in rows}
    used = {(ns, ch, str(v)) for ns, _, _, versions in rows for ch, v in versions.items()}
    writes = set(
        CheckpointWrite.objects.filter(thread_id=thread_id).values_list(
            "checkpoint_ns", "checkpoint_id"
        )
    )
    blobs = set(
        CheckpointBlob.objects.filter(thread_id=thread_id).values_list(
            "checkpoint_ns", "channel", "version"
        )
    )
    parents = {(ns, parent) for ns, _, parent, _ in rows if parent}
    return writes - ids, blobs - used, parents - ids


def plan_then_prune(saver: DjangoSaver, thread_id: str, **how) -> PrunePlan:
    """The plan of a prune, checked against what the prune then removes and leaves."""
    before = saver.count_rows(thread_id)
    assert before == orm_counts(thread_id)
    plan = saver.prune_plan([thread_id], **how)[thread_id]
    assert saver.count_rows(thread_id) == before  # the dry run changed nothing
    assert plan.removed + plan.kept == before
    saver.prune([thread_id], **how)
    after = orm_counts(thread_id)
    assert plan.removed == before - after
    assert plan.kept == after
    assert orphans(thread_id) == (set(), set(), set())
    return plan


def test_keep_last_counts_exactly_what_goes_shared_blobs_kept():
    saver = DjangoSaver()
    ids = plain(saver, "plain")
    plan = plan_then_prune(saver, "plain", keep_last=2)
    # a@1..a@3 are freed; b@1 is used by the kept checkpoints; two writes each.
    assert plan.removed == Counts(checkpoints=3, blobs=3, writes=6)
    assert plan.kept == Counts(checkpoints=2, blobs=3, writes=4)
    assert root_ids("plain") == ids[:2:-1]
    [newest, oldest] = saver.list({"configurable": {"thread_id": "plain", "checkpoint_ns": ""}})
    assert oldest.parent_config is None  # its parent is gone: it is a root now
    assert newest.parent_config["configurable"]["checkpoint_id"] == ids[3]
    assert oldest.checkpoint["channel_values"] == {"a": [3], "b": ["shared"]}
    assert [w[1:] for w in newest.pending_writes] == [("a", [4]), ("b", ["w"])]


def test_keep_latest_is_keep_last_one_and_delete_removes_everything():
    saver = DjangoSaver()
    plain(saver, "one")
    plain(saver, "two")
    plans = saver.prune_plan(["one", "two"])
    assert plans == saver.prune_plan(["one", "two"], keep_last=1)
    assert plans["one"] == plans["two"]
    assert plans["one"].removed == Counts(checkpoints=4, blobs=4, writes=8)
    plan_then_prune(saver, "one", strategy="keep_latest")
    assert len(root_ids("one")) == 1

    whole = saver.count_rows("two")
    plan = plan_then_prune(saver, "two", strategy="delete")
    assert plan == PrunePlan(removed=whole, kept=Counts())
    assert saver.count_rows("two") == Counts()


def test_keep_last_n_keeps_delta_channel_values_identical():
    # 23 ticks with parallel writes every fifth: the newest checkpoints are not snapshots.
    delta = run_graph(build_delta(), "delta", {"n": 0, "steps": 23, "log": []})
    saver = DjangoSaver()
    saver.copy_thread("delta", "delta-reference")
    newest = root_ids("delta")[:4]
    before = [view(delta, config("delta", c)) for c in newest]
    latest = view(delta, config("delta"))
    assert len(latest[0]["log"]) > 23 and latest[2]  # the log, and the pending interrupt
    count = len(root_ids("delta"))

    plan = plan_then_prune(saver, "delta", keep_last=4)

    kept = root_ids("delta")
    assert kept[:4] == newest
    assert 4 < len(kept) < count  # the ancestors back to the last snapshot, no more
    assert plan.removed.checkpoints == count - len(kept)
    assert plan.removed.writes > 0
    reader = build_delta().compile(checkpointer=DjangoSaver())
    assert [view(reader, config("delta", c)) for c in newest] == before
    assert view(reader, config("delta")) == latest
    # It resumes as its untouched copy does.
    assert reader.invoke(Command(resume="yes"), config("delta")) == reader.invoke(
        Command(resume="yes"), config("delta-reference")
    )


def test_keep_last_n_keeps_n_per_namespace_subgraph_state_included():
    nested = run_graph(build_nested(), "nested", {"n": 0, "steps": 6, "notes": []})
    saver = DjangoSaver()
    namespaces = set(
        Checkpoint.objects.filter(thread_id="nested").values_list("checkpoint_ns", flat=True)
    )
    assert len(namespaces) == 2
    newest = root_ids("nested")[:2]
    before = [view(nested, config("nested", c)) for c in newest]

    plan_then_prune(saver, "nested", keep_last=2)

    per_ns = list(Checkpoint.objects.filter(thread_id="nested").values_list("checkpoint_ns"))
    assert sorted(per_ns) == sorted([(ns,) for ns in namespaces for _ in range(2)])
    reader = build_nested().compile(checkpointer=DjangoSaver())
    assert [view(reader, config("nested", c)) for c in newest] == before


def test_a_thread_that_keeps_everything_loses_nothing():
    saver = DjangoSaver()
    plain(saver, "short", steps=3)
    whole = saver.count_rows("short")
    plan = plan_then_prune(saver, "short", keep_last=10)
    assert plan == PrunePlan(removed=Counts(), kept=whole)
    assert saver.prune_plan(["absent"])["absent"] == PrunePlan(Counts(), Counts())


@pytest.mark.parametrize(
    ("how", "error"),
    [
        ({"keep_last": 0}, ValueError),
        ({"keep_last": True}, ValueError),
        ({"keep_last": 2.5}, ValueError),
        ({"strategy": "delete", "keep_last": 2}, ValueError),
        ({"strategy": "keep_last"}, ValueError),
    ],
)
def test_bad_pruning_arguments_are_refused_and_change_nothing(how, error):
    saver = DjangoSaver()
    plain(saver, "kept")
    before = saver.count_rows("kept")
    with pytest.raises(error):
        saver.prune_plan(["kept"], **how)
    with pytest.raises(error):
        saver.prune(["kept"], **how)
    with pytest.raises(TypeError):
        saver.prune_plan("kept")
    with pytest.raises(ValueError):
        saver.count_rows("x" * 256)
    assert saver.count_rows("kept") == before


def test_the_async_twins_give_the_same_answers():
    saver = DjangoSaver()
    plain(saver, "async")
    plan = saver.prune_plan(["async"], keep_last=2)
    assert asyncio.run(saver.aprune_plan(["async"], keep_last=2)) == plan
    before = asyncio.run(saver.acount_rows("async"))
    asyncio.run(saver.aprune(["async"], keep_last=2))
    assert saver.count_rows("async") == before - plan["async"].removed
