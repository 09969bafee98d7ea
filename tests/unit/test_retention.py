"""Retention (``durable.retention``): policies applied in batches through the saver.

What survives reads as before (``get_state`` values, ``next``, interrupts, DeltaChannel
values and subgraph states included), nothing is left behind, threads with an active
run are skipped, a dry run changes nothing, and every prune or delete is audited. Also
``manage.py prune_threads``, the Celery task and its beat schedule.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connection, connections, transaction
from django.utils import timezone
from langgraph.types import Command

from dashboard.celery import app as celery_app
from durable import engine, retention
from durable.engine import tasks
from durable.graphs import get_graph
from durable.models import (
    AuditEvent,
    Checkpoint,
    CheckpointBlob,
    CheckpointWrite,
    RetentionPolicy,
    Run,
    StoreItem,
    Tenant,
    Thread,
)
from durable.persistence.checkpoint import DjangoSaver
from durable.persistence.store import DjangoStore
from tests.helpers.processes import ROOT, worker_env
from tests.helpers.retention import MONTH, age, history, root_ids
from tests.helpers.retention_graphs import RECURSION_LIMIT
from tests.helpers.threads import at_interrupt, everything

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("retention_graphs")]


# -- helpers ------------------------------------------------------------------------------


def forked(thread: Thread) -> Thread:
    """``thread`` with a branch: a copy of a checkpoint from the middle of its history,
    which becomes its newest checkpoint."""
    ids = root_ids(thread)
    engine.fork(thread, ids[len(ids) // 2], None, as_node="__copy__")
    return thread


def snapshot(state) -> tuple:
    """What an operator sees of a ``StateSnapshot``: values, next, the interrupts (ids
    and values) and, for each task, its interrupts and its subgraph's state."""
    return (
        state.values,
        state.next,
        [(i.id, i.value) for i in state.interrupts],
        [
            (
                t.name,
                [(i.id, i.value) for i in t.interrupts],
                snapshot(t.state) if hasattr(t.state, "values") else None,
            )
            for t in state.tasks
        ],
    )


def view(thread: Thread, checkpoint_id: str | None = None) -> tuple:
    graph = get_graph(thread.graph)
    return snapshot(graph.get_state(engine.config_for(thread, checkpoint_id), subgraphs=True))


def orphans() -> dict[str, list]:
    """Rows nothing points at any more: blobs of channel versions no checkpoint of their
    namespace uses, writes of checkpoints that are gone, parents that are gone."""
    present = set(Checkpoint.objects.values_list("thread_id", "checkpoint_ns", "checkpoint_id"))
    used = {
        (thread_id, ns, channel, str(version))
        for thread_id, ns, versions in Checkpoint.objects.values_list(
            "thread_id", "checkpoint_ns", "channel_versions"
        )
        for channel, version in versions.items()
    }
    return {
        "blobs": [
            b
            for b in CheckpointBlob.objects.values_list(
                "thread_id", "checkpoint_ns", "channel", "version"
            )
            if b not in used
        ],
        "writes": [
            w
            for w in CheckpointWrite.objects.values_list(
                "thread_id", "checkpoint_ns", "checkpoint_id"
            )
            if w not in present
        ],
        "parents": [
            p
            for p in Checkpoint.objects.exclude(parent_checkpoint_id=None).values_list(
                "thread_id", "checkpoint_ns", "parent_checkpoint_id"
            )
            if p not in present
        ],
    }


NO_ORPHANS = {"blobs": [], "writes": [], "parents": []}


def policy(**fields) -> RetentionPolicy:
    fields.setdefault("tenant", Tenant.default())
    return RetentionPolicy.objects.create(**fields)


def by_thread(report: retention.Report) -> dict[int, retention.Outcome]:
    return {o.thread_pk: o for o in report.outcomes}


def rows_of(thread_id: str) -> retention.Counts:
    return DjangoSaver().count_rows(thread_id)


def resume(graph: str, thread_id: str) -> dict:
    config = {"configurable": {"thread_id": thread_id}, "recursion_limit": RECURSION_LIMIT}
    return get_graph(graph).invoke(Command(resume="yes"), config)


# -- survivors ------------------------------------------------------------------------------


def test_keep_latest_keeps_what_every_survivor_reads_delta_channels_and_subgraphs_included():
    # 29 ticks: the interrupted checkpoint is not a snapshot of the log (30 would be).
    delta = history("retention_delta", 29)
    delta_fork = forked(history("retention_delta", 12))
    nested = history("retention_nested", 8)
    expense = forked(at_interrupt("expense_approval"))
    review = at_interrupt("parallel_review")
    threads = [delta, delta_fork, nested, expense, review]
    # Untouched copies (no console thread, so no policy reaches them) to resume beside.
    saver = DjangoSaver()
    saver.copy_thread(delta.thread_id, "reference-delta")
    saver.copy_thread(nested.thread_id, "reference-nested")
    age(*threads)
    policy(max_age=MONTH, strategy=RetentionPolicy.Strategy.KEEP_LATEST)
    before = {t.pk: view(t) for t in threads}
    rows_before = {t.pk: rows_of(t.thread_id) for t in threads}
    assert orphans() == NO_ORPHANS
    assert before[review.pk][2] and len(before[review.pk][2]) == 2  # two interrupts pending
    assert before[nested.pk][3][0][2] is not None  # the subgraph's own state

    report = retention.apply()

    outcomes = by_thread(report)
    assert {outcomes[t.pk].action for t in threads} == {"prune"}
    for thread in threads:
        assert view(thread) == before[thread.pk], thread.graph
        outcome = outcomes[thread.pk]
        assert outcome.removed == rows_before[thread.pk] - rows_of(thread.thread_id)
        assert outcome.removed.checkpoints > 0
        assert outcome.before == outcome.after == root_ids(thread)[0]
    assert orphans() == NO_ORPHANS
    # One checkpoint per namespace, except where a DeltaChannel needs its chain.
    for thread in (nested, expense, review):
        per_ns = Checkpoint.objects.filter(thread_id=thread.thread_id).values_list(
            "checkpoint_ns", flat=True
        )
        assert len(per_ns) == len(set(per_ns)), thread.graph
    kept = len(root_ids(delta))
    assert 1 < kept < rows_before[delta.pk].checkpoints / 5  # back to the last snapshot
    # The pruned threads resume exactly as their untouched copies do.
    assert resume("retention_delta", delta.thread_id) == resume(
        "retention_delta", "reference-delta"
    )
    assert resume("retention_nested", nested.thread_id) == resume(
        "retention_nested", "reference-nested"
    )


def test_keep_last_keeps_the_newest_checkpoints_each_reading_as_before():
    delta = forked(history("retention_delta", 30))
    nested = history("retention_nested", 12)
    plain = at_interrupt("expense_approval")
    threads = [delta, nested, plain]
    newest = {t.pk: root_ids(t)[:5] for t in threads}
    before = {t.pk: [view(t, c) for c in newest[t.pk]] for t in threads}
    latest = {t.pk: view(t) for t in threads}
    policy(keep_last=5)

    report = retention.apply()

    for thread in threads:
        ids = root_ids(thread)
        assert ids[:5] == newest[thread.pk]
        assert [view(thread, c) for c in newest[thread.pk]] == before[thread.pk]
        assert view(thread) == latest[thread.pk]
    assert len(root_ids(nested)) == 5
    assert 5 < len(root_ids(delta)) < 20  # plus the chain back to the last snapshot
    assert plain.pk not in by_thread(report)  # it had no more than 5: not even read
    assert orphans() == NO_ORPHANS
    event = AuditEvent.objects.get(thread_id=delta.thread_id, action="prune")
    assert event.detail["strategy"] == "keep_last"
    assert event.detail["keep_last"] == 5
    # A second sweep has nothing left to do, and records nothing.
    again = retention.apply()
    assert again.removed == retention.Counts()
    assert AuditEvent.objects.filter(action="prune").count() == 2  # delta and nested


def test_delete_removes_old_threads_with_everything_and_spares_young_ones():
    old = [history("retention_delta", 10), at_interrupt("expense_approval")]
    young = history("retention_nested", 5)
    Run.objects.create(thread=old[1], graph=old[1].graph, kind="start", status="success")
    age(*old)
    heads = {t.pk: root_ids(t)[0] for t in old}
    sizes = {t.pk: rows_of(t.thread_id) for t in old}
    young_rows = rows_of(young.thread_id)
    policy(max_age=MONTH, strategy=RetentionPolicy.Strategy.DELETE)

    report = retention.apply()

    assert report.deleted == 2 and report.pruned == 0
    for thread in old:
        assert not Thread.objects.filter(pk=thread.pk).exists()
        assert rows_of(thread.thread_id) == retention.Counts()
        event = AuditEvent.objects.get(thread_id=thread.thread_id)
        assert (event.action, event.actor, event.tenant) == ("delete", "retention", thread.tenant)
        assert event.checkpoint_before == heads[thread.pk] and event.checkpoint_after == ""
        assert event.detail["removed"] == sizes[thread.pk].as_dict()
        assert event.detail["strategy"] == "delete"
        assert "not updated for 30 days" in event.reason
    assert not Run.objects.filter(thread=old[1]).exists()
    assert rows_of(young.thread_id) == young_rows
    assert orphans() == NO_ORPHANS


def test_a_graphs_own_policy_wins_over_the_tenants_catch_all():
    delta = history("retention_delta", 12)
    nested = history("retention_nested", 5)
    age(delta, nested)
    policy(max_age=MONTH, strategy=RetentionPolicy.Strategy.DELETE)
    own = policy(graph="retention_delta", max_age=MONTH, strategy="keep_latest")
    # Another tenant's policy reaches none of this tenant's threads.
    policy(tenant=Tenant.objects.create(slug="globex", name="Globex"), keep_last=1)

    dry = by_thread(retention.apply(dry_run=True))
    assert (dry[delta.pk].action, dry[delta.pk].policy) == ("prune", own.pk)
    assert dry[nested.pk].action == "delete"

    # A disabled policy is as if it did not exist: the catch-all applies.
    RetentionPolicy.objects.filter(pk=own.pk).update(enabled=False)
    dry = by_thread(retention.apply(dry_run=True))
    assert dry[delta.pk].action == "delete"


def test_threads_with_an_active_run_are_skipped():
    pending = history("retention_delta", 10)
    running = history("retention_nested", 6)
    idle = history("retention_nested", 6)
    Run.objects.create(thread=pending, graph=pending.graph, kind="start", status="pending")
    Run.objects.create(thread=running, graph=running.graph, kind="resume", status="running")
    Run.objects.create(thread=idle, graph=idle.graph, kind="start", status="interrupted")
    age(pending, running, idle)
    policy(max_age=MONTH, strategy=RetentionPolicy.Strategy.DELETE)
    rows = {t.pk: rows_of(t.thread_id) for t in (pending, running)}

    report = retention.apply()

    outcomes = by_thread(report)
    assert outcomes[pending.pk].action == outcomes[running.pk].action == "skip"
    assert outcomes[pending.pk].note == "active run"
    assert outcomes[idle.pk].action == "delete"
    for thread in (pending, running):
        assert Thread.objects.filter(pk=thread.pk).exists()
        assert rows_of(thread.thread_id) == rows[thread.pk]
        assert not AuditEvent.objects.filter(thread_id=thread.thread_id).exists()
    assert "1 deleted" in report.summary() and "2 skipped (active run)" in report.summary()


def test_a_dry_run_changes_nothing_and_foretells_the_real_run():
    threads = [
        history("retention_delta", 25),
        forked(history("retention_delta", 9)),
        history("retention_nested", 7),
        at_interrupt("parallel_review"),
    ]
    age(*threads[:2])
    policy(max_age=MONTH, keep_last=3)
    before = everything(), AuditEvent.objects.count()

    dry = retention.apply(dry_run=True)

    assert (everything(), AuditEvent.objects.count()) == before
    assert dry.dry_run and dry.removed.checkpoints > 0
    assert dry.summary().startswith("Would remove")
    real = retention.apply()
    assert [(o.thread_pk, o.action, o.keep, o.removed) for o in real.outcomes] == [
        (o.thread_pk, o.action, o.keep, o.removed) for o in dry.outcomes
    ]
    assert {o.keep for o in real.outcomes} == {1, 3}  # old ones to latest, others to 3


def test_threads_are_swept_in_batches():
    threads = [history("retention_nested", 3) for _ in range(5)]
    age(*threads)
    policy(max_age=MONTH)

    dry = retention.apply(dry_run=True, batch_size=2)
    real = retention.apply(batch_size=2)

    assert dry.batches == real.batches == 3
    assert real.pruned == 5
    assert sorted(o.thread_pk for o in real.outcomes) == sorted(t.pk for t in threads)
    # Pruned threads are no longer candidates: the next sweep reads none.
    assert retention.apply(batch_size=2).batches == 0
    with pytest.raises(ValueError, match="batch_size"):
        retention.apply(batch_size=0)


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite has one writer: nothing to skip"
)
def test_a_thread_locked_by_another_transaction_is_left_for_the_next_sweep():
    locked, free = history("retention_nested", 4), history("retention_nested", 4)
    age(locked, free)
    policy(max_age=MONTH)
    holding, release = threading.Event(), threading.Event()

    def hold():
        try:
            with transaction.atomic():
                Thread.objects.select_for_update().get(pk=locked.pk)
                holding.set()
                release.wait(60)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(30)
        first = retention.apply()
    finally:
        release.set()
        holder.join()

    assert [o.thread_pk for o in first.outcomes] == [free.pk]
    second = retention.apply()
    assert [o.thread_pk for o in second.outcomes] == [locked.pk]
    assert second.pruned == 1


def test_prune_and_delete_of_chosen_threads_are_audited_with_the_actor_and_reason():
    a, b = history("retention_nested", 4), history("retention_delta", 8)
    head_a = root_ids(a)[0]

    pruned = retention.prune_threads(
        Thread.objects.filter(pk=a.pk), actor="ops-script", reason="too long"
    )
    deleted = retention.delete_threads(Thread.objects.filter(pk=b.pk), actor="ops-script")

    assert pruned.pruned == 1 and deleted.deleted == 1
    prune = AuditEvent.objects.get(action="prune")
    assert (prune.actor, prune.reason, prune.thread_name) == ("ops-script", "too long", a.name)
    assert prune.checkpoint_before == prune.checkpoint_after == head_a
    assert prune.detail["removed"] == pruned.outcomes[0].removed.as_dict()
    assert prune.detail["kept"] == rows_of(a.thread_id).as_dict()
    assert prune.detail["strategy"] == "keep_latest" and "policy" not in prune.detail
    assert AuditEvent.objects.get(action="delete").thread_id == b.thread_id
    with pytest.raises(ValueError, match="keep"):
        retention.prune_threads(Thread.objects.all(), keep=0)


# -- the command, the task, the schedule ----------------------------------------------------


def command(*args) -> str:
    out = io.StringIO()
    call_command("prune_threads", *args, stdout=out)
    return out.getvalue()


def test_prune_threads_command_prints_counts_per_thread_and_dry_run_changes_nothing():
    delete_me = history("retention_nested", 4)
    prune_me = history("retention_delta", 10)
    busy = history("retention_nested", 4)
    Run.objects.create(thread=busy, graph=busy.graph, kind="start", status="pending")
    age(delete_me, busy)
    policy(graph="retention_nested", max_age=MONTH, strategy="delete")
    policy(graph="retention_delta", keep_last=2)
    before = everything()
    plan = by_thread(retention.apply(dry_run=True))

    dry = command("--dry-run")

    assert everything() == before
    lines = dry.splitlines()
    assert lines[0] == "Dry run: nothing is changed."
    assert lines[1].split()[:2] == ["tenant", "thread"]
    row = next(line for line in lines if delete_me.name in line)
    counts = plan[delete_me.pk].removed
    assert row.split()[-4:] == [
        "delete",
        str(counts.checkpoints),
        str(counts.blobs),
        str(counts.writes),
    ]
    row = next(line for line in lines if prune_me.name in line)
    assert "prune to last 2" in row
    assert row.split()[-3:] == [str(v) for v in plan[prune_me.pk].removed.as_dict().values()]
    assert "skipped: active run" in next(line for line in lines if busy.name in line)
    assert lines[-1].startswith("Would remove ")

    real = command()
    assert "Dry run" not in real
    assert real.splitlines()[-1].startswith("Removed ")
    assert not Thread.objects.filter(pk=delete_me.pk).exists()
    assert AuditEvent.objects.filter(action__in=["prune", "delete"], actor="retention").count() == 2


def test_prune_threads_command_for_one_tenant():
    globex = Tenant.objects.create(slug="globex", name="Globex")
    ours, theirs = history("retention_nested", 4), history("retention_nested", 4, tenant=globex)
    age(ours, theirs)
    policy(max_age=MONTH)
    policy(tenant=globex, max_age=MONTH)

    out = command("--tenant", "globex")

    assert theirs.name in out and ours.name not in out
    assert len(root_ids(theirs)) == 1 and len(root_ids(ours)) > 1
    with pytest.raises(CommandError, match="Unknown tenant 'nope'"):
        command("--tenant", "nope")
    with pytest.raises(CommandError, match="batch-size"):
        command("--batch-size", "0")


def test_the_sweep_task_applies_retention_and_the_stores_ttl():
    thread = history("retention_nested", 4)
    age(thread)
    policy(max_age=MONTH)
    store = DjangoStore()
    store.put(("memories", "ann"), "stale", {"text": "old"}, ttl=1)
    store.put(("memories", "ann"), "fresh", {"text": "new"}, ttl=60)
    StoreItem.objects.filter(key="stale").update(expires_at=timezone.now() - timedelta(minutes=1))

    result = tasks.sweep_retention()

    assert result["store_expired"] == 1
    assert result["retention"]["pruned"] == 1
    assert result["retention"]["removed"]["checkpoints"] > 0
    assert list(StoreItem.objects.values_list("key", flat=True)) == ["fresh"]
    assert len(root_ids(thread)) == 1
    json.dumps(result)  # a Celery result must be JSON


def test_beat_schedules_the_sweep_every_configured_interval():
    entry = settings.CELERY_BEAT_SCHEDULE["sweep-retention"]
    assert entry["task"] == "durable.sweep_retention"
    assert entry["schedule"] == settings.DURABLE_RETENTION_INTERVAL_SECONDS == 3600.0
    celery_app.loader.import_default_modules()
    assert "durable.sweep_retention" in celery_app.tasks
    env = {**worker_env(), "DURABLE_RETENTION_INTERVAL_SECONDS": "120"}
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.CELERY_BEAT_SCHEDULE['sweep-retention']['schedule'])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "120.0"
