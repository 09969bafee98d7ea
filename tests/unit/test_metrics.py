"""``GET /metrics``: who may scrape it, and the series it reads from the tables."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from durable import engine
from durable.models import AuditEvent, Checkpoint, CheckpointBlob, Run, RunEvent, Thread
from tests.helpers.threads import at_interrupt

pytestmark = pytest.mark.django_db(transaction=True)


def scrape(client: Client | None = None, **headers) -> dict[str, list]:
    """The samples of one scrape, by sample name: ``[(labels, value), ...]``."""
    response = (client or Client()).get("/metrics", headers=headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    samples: dict[str, list] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def value(samples: dict, name: str, **labels) -> float | None:
    """The value of the one sample of ``name`` whose labels include ``labels``."""
    found = [v for have, v in samples.get(name, []) if labels.items() <= have.items()]
    assert len(found) <= 1, (name, labels, found)
    return found[0] if found else None


def ended_run(graph_thread: Thread, status: str, seconds: float, waited: float) -> Run:
    now = timezone.now()
    run = Run.objects.create(
        thread=graph_thread, graph=graph_thread.graph, kind="start", status=status
    )
    Run.objects.filter(pk=run.pk).update(
        created_at=now - timedelta(seconds=waited + seconds),
        started_at=now - timedelta(seconds=seconds),
        ended_at=now,
        attempt=1,
    )
    return run


# -- the guard -------------------------------------------------------------------------


def test_a_loopback_client_may_scrape_without_a_token_and_no_other_may():
    assert Client(REMOTE_ADDR="127.0.0.1").get("/metrics").status_code == 200
    assert Client(REMOTE_ADDR="::1").get("/metrics").status_code == 200
    refused = Client(REMOTE_ADDR="10.1.2.3").get("/metrics")
    assert refused.status_code == 403
    assert b"durable_" not in refused.content
    # A reverse proxy on the machine connects from loopback for clients from anywhere.
    for header in ("X-Forwarded-For", "Forwarded", "X-Real-IP"):
        proxied = Client().get("/metrics", headers={header: "203.0.113.9"})
        assert proxied.status_code == 403, header
        assert b"durable_" not in proxied.content


def test_with_a_token_set_only_that_bearer_token_may_scrape(settings):
    settings.DURABLE_METRICS_TOKEN = "s3cret-scrape"
    remote = Client(REMOTE_ADDR="10.1.2.3")
    assert (
        remote.get("/metrics", headers={"Authorization": "Bearer s3cret-scrape"}).status_code == 200
    )
    for sent in ("", "Bearer wrong", "Basic s3cret-scrape", "s3cret-scrape"):
        response = remote.get("/metrics", headers={"Authorization": sent})
        assert response.status_code == 403, sent
        assert b"durable_" not in response.content
    # Loopback is no exception once a token is set.
    assert Client().get("/metrics").status_code == 403


def test_metrics_are_read_only_and_need_no_console_login():
    assert Client().post("/metrics").status_code == 405
    assert Client().get("/metrics").status_code == 200  # not a redirect to the login page


# -- the series ------------------------------------------------------------------------


def test_runs_are_counted_by_graph_tenant_and_status(globex):
    mine = engine.create_thread("expense_approval")
    theirs = engine.create_thread("email_reply", tenant=globex)
    ended_run(mine, Run.Status.SUCCESS, seconds=0.3, waited=0.05)
    ended_run(mine, Run.Status.SUCCESS, seconds=20, waited=2)
    ended_run(mine, Run.Status.ERROR, seconds=4, waited=0.05)
    ended_run(theirs, Run.Status.CANCELLED, seconds=1, waited=0.05)
    Run.objects.create(thread=theirs, graph=theirs.graph, kind="start")  # pending

    s = scrape()
    expense = {"graph": "expense_approval", "tenant": "default"}
    email = {"graph": "email_reply", "tenant": "globex"}
    assert value(s, "durable_runs_requested_total", **expense) == 3
    assert value(s, "durable_runs_requested_total", **email) == 2
    assert value(s, "durable_runs_started_total", **email) == 1
    assert value(s, "durable_runs_ended_total", **expense, status="success") == 2
    assert value(s, "durable_runs_ended_total", **expense, status="error") == 1
    assert value(s, "durable_runs_ended_total", **email, status="cancelled") == 1
    assert value(s, "durable_runs_ended_total", **email, status="success") is None
    assert value(s, "durable_runs_active", **email, status="pending") == 1

    # Durations 0.3, 4 and 20 seconds: buckets are cumulative, the sum in seconds.
    assert value(s, "durable_run_duration_seconds_count", **expense) == 3
    assert value(s, "durable_run_duration_seconds_bucket", **expense, le="0.5") == 1
    assert value(s, "durable_run_duration_seconds_bucket", **expense, le="5.0") == 2
    assert value(s, "durable_run_duration_seconds_bucket", **expense, le="+Inf") == 3
    assert value(s, "durable_run_duration_seconds_sum", **expense) == pytest.approx(24.3, abs=0.01)
    assert value(s, "durable_run_queue_wait_seconds_count", **expense) == 3
    assert value(s, "durable_run_queue_wait_seconds_bucket", **expense, le="0.1") == 2
    assert value(s, "durable_run_queue_wait_seconds_sum", **expense) == pytest.approx(2.1, abs=0.01)


def test_queue_wait_counts_from_the_end_of_a_requested_delay():
    """A run asked to start after 60 s and claimed 2 s after that waited 2 s for a worker,
    not 62: the same rule as the Operations page's."""
    delayed = ended_run(engine.create_thread("expense_approval"), "success", seconds=1, waited=62)
    delayed.refresh_from_db()
    Run.objects.filter(pk=delayed.pk).update(not_before=delayed.created_at + timedelta(seconds=60))
    assert (delayed.started_at - delayed.created_at).total_seconds() == pytest.approx(62)

    s = scrape()
    expense = {"graph": "expense_approval", "tenant": "default"}
    assert value(s, "durable_run_queue_wait_seconds_count", **expense) == 1
    assert value(s, "durable_run_queue_wait_seconds_sum", **expense) == pytest.approx(2, abs=0.01)
    assert value(s, "durable_run_queue_wait_seconds_bucket", **expense, le="1.0") == 0
    assert value(s, "durable_run_queue_wait_seconds_bucket", **expense, le="5.0") == 1


def test_threads_checkpoints_and_interrupts_waiting_are_read_from_their_tables():
    waiting = at_interrupt()
    Thread.objects.filter(pk=waiting.pk).update(updated_at=timezone.now() - timedelta(minutes=5))
    at_interrupt()
    engine.create_thread("expense_approval")

    s = scrape()
    expense = {"graph": "expense_approval", "tenant": "default"}
    assert value(s, "durable_threads", **expense, status="interrupted") == 2
    assert value(s, "durable_threads", **expense, status="idle") == 1
    assert value(s, "durable_interrupts_waiting", **expense) == 2
    assert 300 <= value(s, "durable_interrupt_oldest_age_seconds", **expense) < 400
    assert value(s, "durable_checkpoints", **expense) == Checkpoint.objects.count()
    assert value(s, "durable_checkpoint_blobs", **expense) == CheckpointBlob.objects.count()
    stored = sum(len(b) for b in CheckpointBlob.objects.values_list("blob", flat=True) if b)
    assert value(s, "durable_checkpoint_blob_bytes", **expense) == stored > 0


def test_leases_are_counted_per_worker_and_expired_ones_apart():
    now = timezone.now()
    for worker, expires in (("w1", 30), ("w1", 30), ("w2", 30), ("w3", -5)):
        thread = engine.create_thread("expense_approval")
        Run.objects.create(
            thread=thread,
            graph=thread.graph,
            kind="start",
            status=Run.Status.RUNNING,
            worker=worker,
            lease_expires_at=now + timedelta(seconds=expires),
        )
    s = scrape()
    assert value(s, "durable_worker_leases", worker="w1") == 2
    assert value(s, "durable_worker_leases", worker="w2") == 1
    assert value(s, "durable_worker_leases", worker="w3") is None
    assert value(s, "durable_leases_expired") == 1


def test_requeues_and_retention_removals_are_counted():
    thread = engine.create_thread("expense_approval")
    run = ended_run(thread, Run.Status.SUCCESS, seconds=1, waited=1)
    for status in ("pending", "running", "pending", "running", "success"):
        RunEvent.objects.append(run.pk, RunEvent.LIFECYCLE, {"status": status})
    for action, removed in (("prune", 3), ("prune", 4), ("delete", 10)):
        AuditEvent.objects.create(
            tenant=thread.tenant,
            actor="retention",
            action=action,
            detail={"removed": {"checkpoints": removed, "blobs": 2, "writes": 1}},
        )
    # An operator's own prune is an action, not retention's.
    AuditEvent.objects.create(
        tenant=thread.tenant, actor="grace", action="prune", detail={"removed": {"checkpoints": 9}}
    )
    s = scrape()
    assert value(s, "durable_runs_requeued_total", graph="expense_approval") == 1
    assert value(s, "durable_retention_threads_total", tenant="default", action="prune") == 2
    assert value(s, "durable_retention_threads_total", tenant="default", action="delete") == 1
    assert value(s, "durable_retention_removed_total", tenant="default", kind="checkpoints") == 17
    assert value(s, "durable_retention_removed_total", tenant="default", kind="blobs") == 6


def test_an_empty_deployment_scrapes_cleanly():
    s = scrape()
    assert value(s, "durable_leases_expired") == 0
    assert "durable_runs_requested_total" not in s


# -- in-process series -----------------------------------------------------------------


def test_this_process_checkpoint_and_store_writes_are_timed_and_sized():
    from durable.persistence.store import DjangoStore

    s = scrape()
    at_interrupt()
    store = DjangoStore()
    store.put(("prefs", "grace"), "theme", {"dark": True})
    store.get(("prefs", "grace"), "theme")
    after = scrape()

    def grew(name, **labels):
        return (value(after, name, **labels) or 0) - (value(s, name, **labels) or 0)

    saved = grew("durable_checkpoint_save_seconds_count", operation="put")
    assert saved >= 2
    assert grew("durable_checkpoint_save_bytes_count", operation="put") == saved
    assert grew("durable_checkpoint_save_bytes_sum", operation="put") > 0
    assert grew("durable_checkpoint_save_seconds_count", operation="put_writes") >= 1
    assert grew("durable_store_operation_seconds_count", operation="put") == 1
    assert grew("durable_store_operation_seconds_count", operation="get") == 1
    assert value(after, "durable_event_streams_open") == 0


def test_a_reaper_pass_counts_what_it_recovered_and_sent_again():
    from durable.engine import recovery

    lost = engine.create_thread("expense_approval")
    claimed = Run.objects.create(
        thread=lost,
        graph=lost.graph,
        kind="start",
        status=Run.Status.RUNNING,
        attempt=1,
        worker="gone@host",
        lease_expires_at=timezone.now() - timedelta(seconds=5),
    )
    for status in ("pending", "running"):  # as the engine wrote them
        RunEvent.objects.append(claimed.pk, RunEvent.LIFECYCLE, {"status": status})
    unsent = engine.create_thread("expense_approval")
    Run.objects.create(thread=unsent, graph=unsent.graph, kind="start")
    s = scrape()
    counts = recovery.reap()
    after = scrape()
    assert counts["requeued"] == 1 and counts["redispatched"] == 1
    for name in ("durable_reaper_recovered_total", "durable_reaper_redispatched_total"):
        assert value(after, name) - value(s, name) == 1, name
    assert value(after, "durable_runs_requeued_total", graph="expense_approval") == 1


def test_the_grafana_dashboard_uses_only_series_the_scrape_serves():
    import json
    import re
    from pathlib import Path

    response = Client().get("/metrics")
    served = set()
    for family in text_string_to_metric_families(response.content.decode()):
        suffixes = ("", "_total", "_bucket", "_count", "_sum", "_gcount", "_gsum")
        served |= {family.name + suffix for suffix in suffixes}
    path = Path(__file__).parents[2] / "docs" / "grafana-dashboard.json"
    dashboard = json.loads(path.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    used = {name for expr in exprs for name in re.findall(r"\bdurable_[a-z_]+", expr)}
    assert len(used) >= 20
    assert used <= served, used - served


def test_in_multiprocess_mode_the_scrape_reads_what_other_processes_recorded(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    record = (
        "from durable.metrics import process as m\n"
        "m.REAPER_REDISPATCHED.inc(3)\n"
        "m.STORE_OPERATION_SECONDS.labels('get').observe(0.002)\n"
    )
    for _ in range(2):  # two processes, as two workers would
        subprocess.run([sys.executable, "-c", record], env=env, check=True, timeout=60)
    # A process of its own: this one imported prometheus_client before the variable was
    # set. It reads the in-process part of a scrape (the rest reads this test's database).
    read = (
        "import django; django.setup()\n"
        "from durable.metrics.exposition import in_process\n"
        "from prometheus_client import CollectorRegistry, generate_latest\n"
        "r = CollectorRegistry(); r.register(in_process())\n"
        "import sys; sys.stdout.write(generate_latest(r).decode())\n"
    )
    env["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    text = subprocess.run(
        [sys.executable, "-c", read], env=env, check=True, timeout=60, capture_output=True
    ).stdout.decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    assert value(samples, "durable_reaper_redispatched_total") == 6
    assert value(samples, "durable_store_operation_seconds_count", operation="get") == 2


@pytest.mark.usefixtures("retention_graphs")
def test_a_retention_sweep_is_counted_with_what_it_removed():
    from durable import retention
    from durable.models import RetentionPolicy, Tenant
    from tests.helpers.retention import history

    thread = history("retention_delta", steps=10)
    RetentionPolicy.objects.create(tenant=Tenant.default(), graph="retention_delta", keep_last=3)
    had = Checkpoint.objects.filter(thread_id=thread.thread_id).count()
    s = scrape()
    retention.sweep()
    after = scrape()
    removed = had - Checkpoint.objects.filter(thread_id=thread.thread_id).count()
    assert removed > 0
    assert (
        value(after, "durable_retention_sweeps_total", outcome="done")
        - (value(s, "durable_retention_sweeps_total", outcome="done") or 0)
        == 1
    )
    assert value(after, "durable_retention_threads_total", tenant="default", action="prune") == 1
    assert (
        value(after, "durable_retention_removed_total", tenant="default", kind="checkpoints")
        == removed
    )
