"""The fault drills without workers: the drill graph is nobody's to start, the last
reports show on the Operations page (with the reasons for staff only), the admin lists
them and only those allowed may run the drills. The drills themselves, on real
workers: ``tests/worker/test_drills.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta

import pytest
from celery import current_app
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from durable import drills, engine
from durable.graphs import DRILL_GRAPH, get_graph, graph_names
from durable.models import DrillReport, Role, Tenant, Thread
from durable.tenancy import create_token
from tests.helpers.users import member

pytestmark = pytest.mark.django_db

FAILED_KILL = {
    "name": "kill",
    "outcome": "failed",
    "seconds": None,
    "detail": "run still running after 15 s: no worker recovered it",
}
PASSED_TIMEOUT = {"name": "timeout", "outcome": "passed", "seconds": 0.51, "detail": "handler ran"}


def report(minutes_ago: int, *results: dict, workers: int | None = 2) -> DrillReport:
    at = timezone.now() - timedelta(minutes=minutes_ago)
    return DrillReport.objects.create(
        started_at=at,
        finished_at=at + timedelta(seconds=30),
        workers=workers,
        passed=all(r["outcome"] != "failed" for r in results),
        results=list(results),
    )


def test_the_drill_graph_is_registered_but_not_a_graph_tenants_see():
    assert DRILL_GRAPH not in graph_names()
    assert get_graph(DRILL_GRAPH).name == DRILL_GRAPH


def test_the_api_does_not_start_the_drill_graph():
    key = create_token(Tenant.default(), "ops", role=Role.OPERATOR)[1]
    api = Client(headers={"x-api-key": key})
    response = api.post(
        "/api/runs", {"assistant_id": DRILL_GRAPH, "input": {"drill": "kill"}}, "application/json"
    )
    assert response.status_code in (404, 422), response.content
    assert DRILL_GRAPH in response.content.decode()
    assert not Thread.objects.filter(graph=DRILL_GRAPH).exists()


def test_an_unknown_drill_name_is_refused_naming_the_drills():
    with pytest.raises(drills.UnknownDrill, match="Drills: kill, timeout, retry, database, drain"):
        drills.run_drills(["kill", "fire"])
    assert not DrillReport.objects.exists()


def test_clean_up_removes_the_drill_tenants_threads_only():
    theirs = engine.create_thread("chat")
    ours = engine.create_thread(DRILL_GRAPH, tenant=drills.drill_tenant())
    assert drills.clean_up(drills.drill_tenant()) == 1
    assert Thread.objects.filter(pk=theirs.pk).exists()
    assert not Thread.objects.filter(pk=ours.pk).exists()


def test_the_report_text_says_each_drill_and_its_recovery_time():
    text = drills.report_text(report(0, FAILED_KILL, PASSED_TIMEOUT))
    assert "FAILED" in text.splitlines()[0]
    assert "  kill      FAILED   run still running after 15 s: no worker recovered it" in text
    assert "  timeout   PASSED   recovered in 0.51 s; handler ran" in text


def test_the_operations_page_shows_the_last_drills_with_reasons_for_staff_only():
    report(10, PASSED_TIMEOUT)
    report(1, FAILED_KILL, PASSED_TIMEOUT)
    operator = Client()
    operator.force_login(member("olga"))
    text = operator.get(reverse("operations")).content.decode()
    section = text[text.index('id="h-drills"') :]
    assert section.index("failed") < section.index("passed")  # newest first
    assert "<strong>timeout</strong> passed (0.51 s)" in section
    assert "<strong>kill</strong> failed" in section
    assert "no worker recovered it" not in section

    staff = member("stella")
    staff.is_staff = True
    staff.save()
    client = Client()
    client.force_login(staff)
    section = client.get(reverse("operations")).content.decode()
    assert "<strong>kill</strong> failed: run still running after 15 s" in section


def test_the_operations_page_says_when_no_drill_ran():
    client = Client()
    client.force_login(member("olga"))
    assert "No fault drill has run yet" in client.get(reverse("operations")).content.decode()


def test_in_the_admin_staff_read_the_reports_and_only_those_allowed_run_drills():
    report(1, FAILED_KILL)
    staff = member("stella", role=Role.ADMIN)
    staff.is_staff = True
    staff.save()
    client = Client()
    client.force_login(staff)
    listing = client.get(reverse("admin:durable_drillreport_changelist"))
    assert listing.status_code == 200
    assert "kill failed" in listing.content.decode()
    assert "Run fault drills" not in listing.content.decode()
    run = reverse("admin:durable_drill_run")
    assert client.post(run).status_code == 403
    assert client.get(run).status_code == 405

    staff.user_permissions.add(Permission.objects.get(codename="add_drillreport"))
    client.force_login(staff)
    assert "Run fault drills" in client.get(listing.request["PATH_INFO"]).content.decode()


def use_broker(monkeypatch, url: str) -> None:
    """This process's Celery app on the broker ``url`` for one test, and back after it.
    Its connection pools keep the URL they were first made with, so the test gets pools
    of its own: without that, the URL did not apply if the pools existed already, and if
    they did not, every later test's sends went to this test's broker, for no worker."""
    # Celery reads CELERY_BROKER_URL from the environment before its own setting.
    monkeypatch.setenv("CELERY_BROKER_URL", url)
    monkeypatch.setitem(current_app.conf, "broker_url", url)
    # Redis' socket options (the PostgreSQL + Redis pass) are not for these transports.
    monkeypatch.setitem(current_app.conf, "broker_transport_options", {})
    monkeypatch.setattr(current_app, "_pool", None)
    monkeypatch.setattr(current_app.amqp, "_producer_pool", None)


@pytest.fixture
def embedded_broker(monkeypatch, tmp_path):
    """The embedded broker (kombu's SQLAlchemy transport, no broadcast) on a file of
    this test's own: a message sent there is for no worker."""
    use_broker(monkeypatch, f"sqla+sqlite:///{tmp_path}/b.sqlite3")


@pytest.fixture
def broadcasting_broker(monkeypatch):
    """A broker with broadcast (kombu's in-memory transport: no worker answers)."""
    use_broker(monkeypatch, "memory://")


def test_with_the_embedded_broker_the_workers_are_not_counted_and_drain_says_why(
    embedded_broker,
):
    result = drills.run_drills(["drain"])

    assert result.workers is None
    (drain,) = result.results
    assert drain["outcome"] == "skipped"
    assert drain["detail"] == (
        "needs 2 workers, which cannot be counted: the broker cannot ping workers"
        " (the embedded one has no broadcast)"
    )
    text = drills.report_text(result)
    assert "0 worker(s)" not in text
    assert "workers not counted: the broker cannot ping workers" in text.splitlines()[0]

    client = Client()
    client.force_login(member("olga"))
    section = client.get(reverse("operations")).content.decode()
    section = section[section.index('id="h-drills"') :]
    assert "<td>0</td>" not in section
    assert "<td>not counted" in section


def test_with_a_broadcasting_broker_the_workers_that_answer_are_counted(broadcasting_broker):
    result = drills.run_drills(["drain"])
    assert result.workers == 0
    assert result.results[0]["detail"] == "needs 2 workers (0 answered Celery's ping)"


def run_drills_in_the_admin() -> str:
    root = get_user_model().objects.create_superuser("root", password="a-test-password-1")
    client = Client()
    client.force_login(root)
    response = client.post(reverse("admin:durable_drill_run"), follow=True)
    return response.content.decode()


def test_the_admin_button_says_drain_is_skipped_when_the_broker_cannot_ping(embedded_broker):
    page = run_drills_in_the_admin()
    assert "The drain drill is skipped: the broker cannot ping workers" in page
    assert "drained by SIGTERM" not in page


def test_the_admin_button_says_a_worker_may_be_drained_when_two_answer(broadcasting_broker):
    page = run_drills_in_the_admin()
    assert "If two or more workers answer Celery&#x27;s ping, one is drained by SIGTERM" in page


def manage(*args: str, var_dir) -> subprocess.CompletedProcess:
    """``manage.py`` in a process of its own, as an operator runs it: the embedded
    default (SQLite, the embedded broker) under ``var_dir``."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env.update(DURABLE_VAR_DIR=str(var_dir), DJANGO_SETTINGS_MODULE="dashboard.settings")
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_drill_command_prints_its_report_alone_and_logs_on_stderr_from_v2(tmp_path):
    assert manage("migrate", "-v0", var_dir=tmp_path).returncode == 0

    done = manage("drill", "--only", "drain", var_dir=tmp_path)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("Fault drills at ") and lines[0].endswith(": PASSED")
    assert lines[1:] == [
        "  drain     SKIPPED  needs 2 workers, which cannot be counted: the broker cannot"
        " ping workers (the embedded one has no broadcast)"
    ]
    assert "drill drain" not in done.stderr  # quiet by default
    told = manage("drill", "--only", "drain", "-v", "2", var_dir=tmp_path)
    assert told.stdout.splitlines()[1:] == lines[1:]
    logged = [json.loads(line) for line in told.stderr.splitlines() if line.startswith("{")]
    assert [e["message"].split(":")[0] for e in logged] == ["drill drain", "drill drain"]
