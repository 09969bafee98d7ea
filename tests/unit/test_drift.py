"""Schema drift (``durable.engine.fit``, ``durable.reports.drift``, ``durable.engine.versions``):
a thread of ``drifting`` stopped at its interrupt on v1, then v2 deployed in this process
(``tests.helpers.drift.deploy``), which renames state key ``topic`` to ``subject`` and
node ``review`` to ``approve``. Runs are executed here (``execution.execute``), as a
worker would."""

from __future__ import annotations

import pytest

from durable import engine, reports
from durable.models import Checkpoint, GraphVersion, Run, Thread
from tests.helpers import drift
from tests.helpers.drift import deploy, ran

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def old_thread() -> Thread:
    return drift.old_thread()


def test_a_run_records_its_graph_version_on_itself_its_thread_and_checkpoints(old_thread):
    run = old_thread.runs.get()
    version = run.graph_version
    assert version.graph == "drifting"
    assert version.name == f"v1-{version.digest[:7]}"
    assert "review" in version.nodes and "topic" in version.state_keys
    assert old_thread.graph_version == version
    written = Checkpoint.objects.filter(thread_id=old_thread.thread_id, checkpoint_ns="")
    assert {c.metadata["graph_version"] for c in written} == {version.digest}


def test_the_same_structure_is_one_version_and_another_is_the_next(old_thread):
    with deploy(1):
        assert engine.deployed_version("drifting") == old_thread.graph_version
    with deploy(2):
        v2 = engine.deployed_version("drifting")
    assert v2.number == 2 and v2.name.startswith("v2-")
    assert v2.digest != old_thread.graph_version.digest
    assert "approve" in v2.nodes and "subject" in v2.required_keys
    assert GraphVersion.objects.filter(graph="drifting").count() == 2


def test_a_thread_fits_the_version_that_wrote_it(old_thread):
    with deploy(1):
        assert engine.thread_drift(old_thread) is None
        assert list(reports.drifted_threads(Thread.objects.all())) == []


def test_the_drift_names_each_thing_that_does_not_fit_and_since_when(old_thread):
    with deploy(2):
        drift = engine.thread_drift(old_thread)
        drifted = list(reports.drifted_threads(Thread.objects.all()))
    assert drifted == [old_thread]
    kinds = {(f.kind, f.subject) for f in drift.findings}
    assert kinds == {
        ("removed_key", "topic"),
        ("missing_key", "subject"),
        ("missing_node", "review"),
        ("interrupt_node", "review"),
    }
    assert drift.written_by == old_thread.graph_version
    assert drift.since == drift.deployed and drift.since.number == 2
    text = drift.explain()
    assert "'topic' is not in the state schema" in text and "'review'" in text
    assert drift.since.name in text


def test_resume_replay_and_answer_again_are_refused_naming_the_graph_version(old_thread):
    head = Checkpoint.objects.filter(thread_id=old_thread.thread_id).order_by("-checkpoint_id")
    head = head.first().checkpoint_id
    with deploy(2):
        for request in (
            lambda: engine.resume(old_thread, "yes"),
            lambda: engine.replay(old_thread, head),
            lambda: engine.answer_again(old_thread, head, "yes"),
            lambda: engine.start("drifting", None, name=old_thread.name),
        ):
            with pytest.raises(engine.InvalidRequest) as refused:
                request()
            assert refused.value.field == "graph_version"
            assert "'review'" in refused.value.message
    assert Run.objects.count() == 1  # nothing was written


def test_the_migration_maps_the_renamed_key_and_leads_to_a_node_that_exists(old_thread):
    with deploy(2):
        migration = reports.migration(old_thread)
        assert migration.values == {"subject": "budget"}
        assert migration.renamed == {"topic": "subject"}
        assert migration.as_node == "prepare"
        assert migration.next == ("approve",)
        forked = engine.fork(
            old_thread,
            migration.checkpoint_id,
            migration.values,
            as_node=migration.as_node,
            run=True,
        )
        assert engine.thread_drift(old_thread) is None
        assert reports.migration(old_thread) is None
        assert ran(forked.run).status == Run.Status.INTERRUPTED
        assert ran(engine.resume(old_thread, "approved")).status == Run.Status.SUCCESS
        assert engine.thread_state(old_thread).values == {
            "subject": "budget",
            "verdict": "approved: budget",
        }
    assert Run.objects.get(pk=forked.run.pk).graph_version.number == 2


def test_a_thread_waiting_in_a_node_that_is_gone_can_be_closed(old_thread):
    head = Checkpoint.objects.filter(thread_id=old_thread.thread_id).order_by("-checkpoint_id")
    with deploy(2):
        engine.close(old_thread, head.first().checkpoint_id, reason="Obsolete request")
        assert engine.thread_drift(old_thread) is None
        assert engine.thread_state(old_thread).next == ()
    assert Thread.objects.get(pk=old_thread.pk).status == Thread.Status.IDLE


def test_a_replay_from_an_old_checkpoint_of_a_migrated_thread_is_refused(old_thread):
    with deploy(2):
        migration = reports.migration(old_thread)
        engine.fork(old_thread, migration.checkpoint_id, migration.values, as_node="prepare")
        assert engine.thread_drift(old_thread) is None
        with pytest.raises(engine.InvalidRequest) as refused:
            engine.replay(old_thread, migration.checkpoint_id)
    assert refused.value.field == "graph_version"


def test_the_admin_lists_the_graph_versions_read_only(old_thread, superuser):
    from django.test import Client
    from django.urls import reverse

    staff = Client()
    staff.force_login(superuser)
    version = old_thread.graph_version
    listed = staff.get(reverse("admin:durable_graphversion_changelist"), {"q": "drifting"})
    assert listed.status_code == 200 and version.name in listed.content.decode()
    page = staff.get(reverse("admin:durable_graphversion_change", args=[version.pk]))
    assert page.status_code == 200 and version.digest in page.content.decode()
    assert (
        staff.post(reverse("admin:durable_graphversion_change", args=[version.pk])).status_code
        == 403
    )


def test_a_value_the_deployed_schema_refuses_is_drift_since_that_version(old_thread):
    with deploy(3):  # verdict becomes an integer; keys and nodes stay
        drift = engine.thread_drift(old_thread)
        migration = reports.migration(old_thread)
    assert [(f.kind, f.subject) for f in drift.findings] == [("refused_value", "verdict")]
    assert "'asked' is not of type 'integer'" in drift.findings[0].message
    assert drift.since == drift.deployed and drift.since.number == 2  # v2 never recorded
    assert migration.values == {} and migration.as_node == "prepare"
    assert any("Edit 'verdict'" in note for note in migration.notes)


def test_since_is_the_first_recorded_version_the_checkpoint_does_not_fit(old_thread):
    with deploy(2):
        v2 = engine.deployed_version("drifting")
    with deploy(3):
        drift = engine.thread_drift(old_thread)
    assert drift.deployed.number == 3
    assert drift.since == v2
