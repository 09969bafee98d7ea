"""``manage.py drill`` on real worker processes: on two workers every drill passes (on
PostgreSQL + Redis; on SQLite the database drill is skipped, and the drain drill when
the broker cannot answer a ping); with recovery switched off
(``DURABLE_REAPER_ENABLED=0``) the kill drill fails with a report that says why. The
drills run under their own tenant: a tenant's thread is left as it was, and no drill
thread remains.

These tests start their own worker processes, so the session's worker is stopped while
they run.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.urls import reverse

from durable import drills
from durable.drills import DRILL_TENANT
from durable.models import Checkpoint, DrillExecution, DrillReport, Tenant, Thread
from tests.helpers.processes import WorkerProcess, broker_url
from tests.helpers.threads import at_interrupt, head
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

ON_POSTGRES_AND_REDIS = connection.vendor == "postgresql" and broker_url().startswith("redis")


def start_worker(name: str, **env: str) -> WorkerProcess:
    log = settings.VAR_DIR / f"test-worker-{name}.log"
    return WorkerProcess(log, name, concurrency=2, env=env).start()


def drill(*args: str) -> tuple[str, DrillReport]:
    out = StringIO()
    call_command("drill", *args, stdout=out)
    return out.getvalue(), DrillReport.objects.get()


def outcomes(report: DrillReport) -> dict[str, str]:
    return {r["name"]: r["outcome"] for r in report.results}


def no_drill_thread_left():
    assert not Thread.objects.filter(tenant__slug=DRILL_TENANT).exists()
    assert not DrillExecution.objects.exists()


def test_every_drill_passes_on_two_workers_and_leaves_the_tenants_threads_alone(own_workers):
    theirs = at_interrupt()
    before = (theirs.tenant_id, head(theirs), Checkpoint.objects.count())
    first, second = start_worker("drill-a"), start_worker("drill-b")
    try:
        printed, report = drill("--timeout", "60")
    finally:
        first.stop()
        second.stop()

    assert report.passed, printed
    expected = dict.fromkeys(["kill", "timeout", "retry", "database", "drain"], "passed")
    if not ON_POSTGRES_AND_REDIS:
        if connection.vendor != "postgresql":
            expected["database"] = "skipped"
        if (report.workers or 0) < 2:  # None: the embedded broker cannot ping workers
            expected["drain"] = "skipped"
    assert outcomes(report) == expected, printed
    assert report.workers == 2 or not ON_POSTGRES_AND_REDIS
    for result in report.results:
        if result["outcome"] == "passed":
            assert result["seconds"] is not None and result["seconds"] >= 0
            said = f"{result['name']:<9} PASSED   recovered in {result['seconds']:.2f} s"
            assert said in printed
    # The kill drill's second attempt went on from the checkpoint before the kill.
    kill = next(r for r in report.results if r["name"] == "kill")
    assert "attempt 1 killed" in kill["detail"] and "attempt 2 went on" in kill["detail"]

    no_drill_thread_left()
    theirs = Thread.objects.get(pk=theirs.pk)
    assert (theirs.tenant_id, head(theirs), Checkpoint.objects.count()) == before
    assert Tenant.objects.get(pk=theirs.tenant_id).slug != DRILL_TENANT


# The run engine's default timings (durable.conf), not the tests' short ones.
DEFAULT_TIMINGS = {
    "DURABLE_RUN_LEASE_SECONDS": "30",
    "DURABLE_HEARTBEAT_SECONDS": "10",
    "DURABLE_REAPER_INTERVAL_SECONDS": "10",
}


def test_a_killed_pool_process_s_run_goes_on_within_10_s_with_the_default_lease(own_workers):
    worker = start_worker("drill-kill", **DEFAULT_TIMINGS)
    try:
        printed, report = drill("--only", "kill", "--timeout", "60")
    finally:
        worker.stop()

    (kill,) = report.results
    assert kill["outcome"] == "passed", printed
    # A lease (30 s) plus a reaper's interval (10 s) is what waiting for the lease to
    # expire would take; Celery tells the worker its pool process died well before.
    assert kill["seconds"] < 10, printed
    assert f"recovered in {kill['seconds']:.2f} s" in printed
    no_drill_thread_left()


def test_the_kill_drill_fails_with_a_clear_report_when_recovery_is_off(own_workers):
    careless = start_worker("drill-norecovery", DURABLE_REAPER_ENABLED="0")
    try:
        with pytest.raises(CommandError, match="A fault drill failed"):
            out = StringIO()
            call_command("drill", "--only", "kill", "--timeout", "15", stdout=out)
    finally:
        careless.stop()

    report = DrillReport.objects.get()
    assert not report.passed
    (kill,) = report.results
    assert (kill["name"], kill["outcome"], kill["seconds"]) == ("kill", "failed", None)
    assert kill["detail"].startswith("run still running after 15 s: no worker recovered it")
    assert "FAILED" in out.getvalue() and kill["detail"] in out.getvalue()
    no_drill_thread_left()


def test_an_unknown_drill_is_refused_before_anything_runs(own_workers):
    with pytest.raises(CommandError, match="Unknown drill 'meteor'. Drills: kill, timeout"):
        call_command("drill", "--only", "kill", "meteor", stdout=StringIO())
    assert not DrillReport.objects.exists()
    assert not Thread.objects.filter(tenant__slug=DRILL_TENANT).exists()


def test_the_admin_button_runs_the_drills_on_a_worker(own_workers):
    admin = get_user_model().objects.create_superuser("root", password="a-test-password-1")
    client = Client()
    client.force_login(admin)
    first, second = start_worker("drill-c"), start_worker("drill-d")
    try:
        response = client.post(reverse("admin:durable_drill_run"))
        assert response.status_code == 302
        wait_for(DrillReport.objects.exists, timeout=180, message="the drills' report")
    finally:
        first.stop()
        second.stop()
    report = DrillReport.objects.get()
    assert report.passed, drills.report_text(report)
    assert report.requested_by == "root"
    assert {r["name"] for r in report.results} == set(drills.DRILLS)
    no_drill_thread_left()
