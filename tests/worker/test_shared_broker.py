"""Two deployments on one broker: each has its own database, and its web process and
workers agree on a queue of its own (``DURABLE_QUEUE``, by default from the database's
name; on Redis, also the prefix of every key), so each deployment's runs reach its own
workers when they are sent, not a minute later through the reapers' redispatch after
the other deployment's worker dropped them. A worker that is sent a run its database
does not have says so once in its log, with the run and the queue.

Stack A is the suite's own (the test database and the session's worker); stack B is a
second database, migrated here, with a worker of its own on the same broker."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from django.conf import settings
from django.db import connection

from durable import engine
from durable.models import Run
from tests.helpers.processes import ROOT, WorkerProcess, worker_env
from tests.helpers.runs import finished
from tests.helpers.threads import EXPENSE
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

RUNS = 6  # per stack: enough that, on one shared queue, some would reach the other worker
MISSING_RUN = 987654  # an id neither database has


def _in_stack(env: dict, code: str):
    """What ``code`` (Python, with Django set up on ``env``'s database) prints, as JSON."""
    setup = "import django, json; django.setup()\n"
    done = subprocess.run(
        [sys.executable, "-c", setup + code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _sql(statement: str) -> None:
    with connection.cursor() as cur:
        cur.execute(statement)


@pytest.fixture(scope="module")
def stack_b(django_db_setup, django_db_blocker, tmp_path_factory):
    """Stack B: a second database, migrated (on the same PostgreSQL server, or a SQLite
    file of its own), and a worker of its own on the suite's broker with the queue its
    database's name gives it (``DURABLE_QUEUE`` unset). Yields its environment and
    its worker."""
    folder = tmp_path_factory.mktemp("stack-b")
    with django_db_blocker.unblock():
        env = worker_env()
        name = None
        if connection.vendor == "sqlite":
            url = f"sqlite:///{folder / 'other.sqlite3'}"
        else:
            name = f"{connection.settings_dict['NAME']}_other"
            _sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            _sql(f'CREATE DATABASE "{name}"')
            url = env["DATABASE_URL"].rsplit("/", 1)[0] + f"/{name}"
    env |= {"DATABASE_URL": url, "DURABLE_QUEUE": ""}
    migrate = [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"]
    subprocess.run(migrate, cwd=ROOT, env=env, check=True, timeout=300)
    process = WorkerProcess(folder / "worker-b.log", name="stack-b", env=env).start()
    yield env, process
    process.stop()
    if name is not None:
        with django_db_blocker.unblock():
            _sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_deployments_on_one_broker_each_take_only_their_own_runs(worker, stack_b):
    env_b, worker_b = stack_b
    worker.resume()
    # The session's worker may still be sent runs earlier tests deleted: only what it logs
    # from here on counts, and only about stack B's runs.
    logged_before = len(worker.log())
    queue_b = _in_stack(env_b, "from durable import conf; print(json.dumps(conf.DURABLE_QUEUE))")
    assert queue_b != settings.DURABLE_QUEUE

    # Both at once: each stack's runs are on the broker while the other's worker listens.
    started_b = subprocess.Popen(
        [sys.executable, "-c", _START_IN_B],
        cwd=ROOT,
        env=env_b,
        stdout=subprocess.PIPE,
        text=True,
    )
    runs_a = [engine.start("expense_approval", EXPENSE) for _ in range(RUNS)]
    sent_a = {run.pk: Run.objects.get(pk=run.pk).task_id for run in runs_a}
    out, _ = started_b.communicate(timeout=120)
    assert started_b.returncode == 0
    sent_b = json.loads(out.strip().splitlines()[-1])

    # Stack A's runs end on A's worker, each on its first message (the reaper sends a
    # run again under a new task id only once its message counts as lost).
    for run in runs_a:
        ended = finished(run)
        assert (ended.status, ended.worker, ended.task_id) == (
            Run.Status.INTERRUPTED,
            worker.hostname,
            sent_a[run.pk],
        )
    # Stack B's, on B's worker, likewise.
    ended_b = wait_for(
        lambda: (
            (rows := _in_stack(env_b, _READ_IN_B.format(ids=list(sent_b))))
            and all(r["status"] not in ("pending", "running") for r in rows)
            and rows
        ),
        timeout=60,
        message="stack B's runs to end",
    )
    assert [(r["status"], r["worker"], r["task_id"]) for r in ended_b] == [
        ("interrupted", worker_b.hostname, sent_b[str(r["id"])]) for r in ended_b
    ]
    # Neither worker was handed a run of the other's.
    dropped_by_a = [
        line
        for line in worker.log()[logged_before:].splitlines()
        if "is not in this deployment's database" in line
    ]
    assert not [line for line in dropped_by_a if any(f"run {pk} " in line for pk in sent_b)]
    assert "is not in this deployment's database" not in worker_b.log()


def test_a_worker_sent_a_run_it_does_not_have_says_so_once_with_the_queue(stack_b):
    env_b, worker_b = stack_b
    queue_b = _in_stack(
        env_b,
        "from celery import current_app; from durable import conf;"
        " from durable.tasknames import RUN_TASK;"
        f" current_app.send_task(RUN_TASK, ({MISSING_RUN},));"
        " print(json.dumps(conf.DURABLE_QUEUE))",
    )
    said = f"run {MISSING_RUN} is not in this deployment's database"
    wait_for(lambda: said in worker_b.log(), timeout=30, message="the worker's log line")
    [line] = [line for line in worker_b.log().splitlines() if said in line]
    assert f"from queue {queue_b!r}" in json.loads(line)["message"]


# Stack B's process: RUNS runs of expense_approval, printed as {run id: task id}.
_START_IN_B = f"""
import django, json
django.setup()
from durable import engine
from durable.models import Run
runs = [engine.start("expense_approval", {EXPENSE!r}) for _ in range({RUNS})]
print(json.dumps({{r.pk: Run.objects.get(pk=r.pk).task_id for r in runs}}))
"""
# Stack B's runs, as [{{id, status, worker, task_id}}].
_READ_IN_B = """
from durable.models import Run
rows = Run.objects.filter(pk__in={ids}).order_by("pk").values("id", "status", "worker", "task_id")
print(json.dumps(list(rows)))
"""
