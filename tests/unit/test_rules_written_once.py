"""The engine's rules written once: a thread's active run (the page follows the running
one, not a queued one), an answer's JSON Schema check, numbering events after a lost
race, the SSE response, the Celery task names, where the app writes its files, and the
environment, read in one place (``dashboard/settings.py``) with every ``DURABLE_*``
setting's default and meaning in ``durable.conf``."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import IntegrityError
from django.urls import reverse

from dashboard import settings as project_settings
from dashboard.celery import app as celery_app
from durable import conf, engine, sse
from durable.engine import checks, tasks
from durable.models import SEQ_ATTEMPTS, Run, RunEvent, numbered
from durable.tasknames import RETENTION_TASK, RUN_TASK
from tests.helpers.threads import made_run


@pytest.mark.django_db
def test_the_thread_page_follows_its_running_run_not_the_one_queued_behind_it(client):
    running = made_run()
    queued = Run.objects.create(
        thread=running.thread, graph=running.graph, kind="start", status=Run.Status.PENDING
    )
    assert engine.active_run(running.thread) == running
    page = client.get(reverse("thread", args=[running.thread_pk])).content.decode()
    seq = RunEvent.objects.highest_seq(running.pk)
    assert f'sse-connect="{reverse("run-events", args=[running.pk])}?after={seq}"' in page
    assert reverse("run-events", args=[queued.pk]) not in page


def test_an_answer_is_checked_against_the_payloads_response_schema_unless_broken():
    schema = {"type": "object", "properties": {"approved": {"type": "boolean"}}}
    assert checks.response_schema({"question": "?", "response_schema": schema}) == schema
    assert checks.response_schema({"response_schema": "not a schema"}) is None
    assert checks.response_schema("a plain question") is None
    error = checks.schema_error({"approved": "yes"}, schema)
    assert list(error.absolute_path) == ["approved"]
    assert checks.schema_error({"approved": True}, schema) is None
    assert checks.schema_error("anything", {"type": "no such type"}) is None


def test_a_numbered_write_is_made_again_after_a_lost_race_up_to_its_attempts():
    calls = []

    def write(value):
        calls.append(value)
        if len(calls) < SEQ_ATTEMPTS:
            raise IntegrityError("duplicate seq")
        return value

    assert numbered(write, "written") == "written"
    assert len(calls) == SEQ_ATTEMPTS

    def always_refused():
        calls.append(None)
        raise IntegrityError("duplicate seq")

    calls.clear()
    with pytest.raises(IntegrityError):
        numbered(always_refused)
    assert len(calls) == SEQ_ATTEMPTS


def test_the_sse_response_streams_events_uncached_and_unbuffered():
    async def events():
        yield sse.KEEPALIVE

    response = sse.response(events())
    assert response.streaming
    assert response["Content-Type"] == "text/event-stream"
    assert response["Cache-Control"] == "no-store"
    assert response["X-Accel-Buffering"] == "no"


def test_the_tasks_are_registered_under_the_names_the_engine_and_beat_send():
    celery_app.loader.import_default_modules()
    assert celery_app.tasks[RUN_TASK].name == tasks.execute_run.name == RUN_TASK
    assert celery_app.tasks[RETENTION_TASK].name == tasks.sweep_retention.name


def test_the_apps_files_go_to_durable_var_dir(settings):
    assert conf.default("DURABLE_VAR_DIR") == Path("var")
    assert conf.DURABLE_VAR_DIR == settings.VAR_DIR
    del settings.DURABLE_VAR_DIR
    assert conf.DURABLE_VAR_DIR == Path("var")


ROOT = Path(__file__).resolve().parents[2]
# Not reads of the configuration: the entry points choose the settings module before any
# setting is read, and prometheus_client's multiprocess directory is the library's own
# variable, which it reads itself at import (the two must agree).
ENVIRONMENT_READ_ELSEWHERE = {
    ("dashboard/asgi.py", "DJANGO_SETTINGS_MODULE"),
    ("dashboard/celery.py", "DJANGO_SETTINGS_MODULE"),
    ("dashboard/wsgi.py", "DJANGO_SETTINGS_MODULE"),
    ("durable/metrics/exposition.py", "PROMETHEUS_MULTIPROC_DIR"),
    ("durable/metrics/exposition.py", "prometheus_multiproc_dir"),
}


def _environment_reads(path: Path):
    """``(line, variable or None)`` for each use of ``os.environ``/``os.getenv`` or
    ``environs`` in the module at ``path``."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("os", "environs"):
            if node.module == "environs" or {a.name for a in node.names} & {"environ", "getenv"}:
                yield node.lineno, None
        elif isinstance(node, ast.Import) and any(a.name == "environs" for a in node.names):
            yield node.lineno, None
        elif isinstance(node, ast.Call):
            func = node.func
            target = func.value if isinstance(func, ast.Attribute) else None
            is_environ = isinstance(target, ast.Attribute) and target.attr == "environ"
            is_getenv = isinstance(func, ast.Attribute) and func.attr == "getenv"
            if is_environ or is_getenv:
                name = (
                    node.args[0].value
                    if node.args and isinstance(node.args[0], ast.Constant)
                    else None
                )
                yield node.lineno, name
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
            if node.value.attr == "environ":
                yield node.lineno, None


def test_the_environment_is_read_in_one_place_the_projects_settings():
    sources = [
        p for top in ("durable", "dashboard", "examples") for p in (ROOT / top).rglob("*.py")
    ]
    elsewhere = [
        f"{path.relative_to(ROOT)}:{line} ({name})"
        for path in sources
        if path != ROOT / "dashboard" / "settings.py"
        for line, name in _environment_reads(path)
        if (str(path.relative_to(ROOT)), name) not in ENVIRONMENT_READ_ELSEWHERE
    ]
    assert elsewhere == []
    assert list(_environment_reads(ROOT / "dashboard" / "settings.py"))  # the one reader


def test_every_durable_setting_has_its_default_and_its_meaning_in_conf():
    project = {name for name in vars(project_settings) if name.startswith("DURABLE_")}
    assert project - set(conf.DEFAULTS) == set()
    documented = set(re.findall(r"^- ``(DURABLE_[A-Z_]+)``", conf.__doc__, re.MULTILINE))
    assert set(conf.DEFAULTS) - documented == set()


def _settings_under(**environment) -> subprocess.CompletedProcess:
    """The project's settings imported in a fresh process under ``environment``; prints
    the reaper, synchronous-commit and debug settings."""
    code = (
        "from dashboard import settings as s; "
        "print(s.DURABLE_REAPER_ENABLED, s.DURABLE_RUN_SYNCHRONOUS_COMMIT, s.DEBUG)"
    )
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("DURABLE_", "DJANGO_"))}
    env = {**inherited, "DJANGO_SECRET_KEY": "a-test-key", **environment}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )


def test_one_yes_no_convention_and_a_bad_value_stops_the_start_naming_it():
    assert _settings_under().stdout.split() == ["True", "False", "True"]  # the defaults
    read = _settings_under(
        DURABLE_REAPER_ENABLED="0", DURABLE_RUN_SYNCHRONOUS_COMMIT="1", DJANGO_DEBUG="false"
    )
    assert read.stdout.split() == ["False", "True", "False"]
    refused = _settings_under(DURABLE_REAPER_ENABLED="maybe")
    assert refused.returncode != 0
    assert 'Environment variable "DURABLE_REAPER_ENABLED" invalid' in refused.stderr
