"""A real worker logs JSON lines: after a real run, the lines it logged meanwhile are
JSON objects, and those about the run carry its ``run_id``, ``thread_id`` (the thread's
name), ``tenant``, ``graph`` and ``attempt``, plus ``node`` on the lines its nodes log
(or print). The command the run page shows finds them in the worker's log; the web
process logs JSON lines too."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import httpx
import pytest
from django.conf import settings
from django.urls import reverse

from durable import engine, logcontext
from durable.models import Run
from tests.helpers.log_graphs import LINE, PRINTED
from tests.helpers.processes import WORKER_LOG, WorkerProcess
from tests.helpers.runs import finished
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_a_runs_worker_lines_are_json_with_its_fields(worker, client):
    offset = len(worker.log())
    run = finished(engine.start("logged", {}))
    assert run.status == Run.Status.SUCCESS
    thread = run.thread
    # Celery logs the task's end once it has returned: the run's lines are all written.
    wait_for(
        lambda: re.search(r"durable\.execute_run\[[0-9a-f-]+\] succeeded", worker.log()[offset:]),
        message="the run's task to be logged as done",
    )

    # Every line the worker logged meanwhile (Celery's own included) is one JSON object.
    logged = _lines(worker.log()[offset:])
    ours = [line for line in logged if line.get("run_id") == run.pk]
    expected = {
        "run_id": run.pk,
        "thread_id": thread.name,
        "tenant": thread.tenant.slug,
        "graph": "logged",
        "attempt": 1,
    }
    by_message = {line["message"]: line for line in ours}
    for message, node in ((LINE.format("plan"), "plan"), (LINE.format("act"), "act")):
        line = by_message[message]
        assert {k: line[k] for k in expected} == expected
        assert line["node"] == node and line["level"] == "INFO"
    # Celery's line saying the run's task ended is one of the run's lines.
    assert any(re.search(r"\] succeeded in", line["message"]) for line in ours)
    # What the node printed, which Celery logs, says which node printed it.
    assert by_message[PRINTED]["node"] == "act"
    assert by_message[PRINTED]["run_id"] == run.pk

    # The run page's command finds these lines in the worker's log, and no other run's.
    if shutil.which("jq"):
        page = client.get(reverse("run", args=[run.pk])).content.decode()
        command = logcontext.query(run.pk, "json")
        escaped = command.replace("'", "&#x27;")
        assert f"<code>{escaped}</code>" in page
        with WORKER_LOG.open() as log:
            found = subprocess.run(
                command, shell=True, stdin=log, capture_output=True, text=True, check=True
            ).stdout
        assert {line["message"] for line in _lines(found)} >= set(by_message)
        assert all(line["run_id"] == run.pk for line in _lines(found))


def test_a_worker_set_to_text_logs_plain_lines_grep_finds(worker):
    """``make run``'s form: plain lines, each about a run ending in its fields."""
    worker.pause()  # so that the text worker takes the run
    text_worker = WorkerProcess(
        settings.VAR_DIR / "test-worker-text.log", name="text", env={"DURABLE_LOG_FORMAT": "text"}
    )
    try:
        text_worker.start()
        run = finished(engine.start("logged", {}))
        assert run.status == Run.Status.SUCCESS
        wait_for(lambda: PRINTED in text_worker.log(), message="the run's lines")
        found = subprocess.run(
            logcontext.query(run.pk, "text"),
            shell=True,
            input=text_worker.log(),
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    finally:
        text_worker.stop()
        worker.resume()
    fields = f"run_id={run.pk} thread_id={run.thread.name} tenant=default graph=logged"
    plan = next(line for line in found if LINE.format("plan") in line)
    assert plan.endswith(f"{LINE.format('plan')} [{fields} node=plan attempt=1]")
    assert plan.startswith("[") and "INFO" in plan
    assert any(PRINTED in line and "node=act" in line for line in found)
    assert not any(line.startswith("{") for line in text_worker.log().splitlines())


def test_the_web_process_logs_json_lines(web):
    offset = len(web.log())
    httpx.get(f"{web.url}/no-such-page/")
    wait_for(lambda: "/no-such-page/" in web.log()[offset:], message="the request's lines")
    lines = _lines(web.log()[offset:])
    assert any("/no-such-page/" in line["message"] for line in lines)
    assert all({"timestamp", "level", "logger", "message"} <= set(line) for line in lines)
