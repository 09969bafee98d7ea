"""The engine's rules written once: a thread's active run (the page follows the running
one, not a queued one), an answer's JSON Schema check, numbering events after a lost
race, the SSE response, the Celery task names, where the app writes its files, an
interrupt payload's kind and action (in Python and in SQL), the run's wire shape (the
OpenAPI document's ``Run`` is what is sent), scoping to a tenant, reports importing
the engine, never the reverse, a run request's rules, and the environment, read in one
place (``dashboard/settings.py``) with every ``DURABLE_*`` setting's default and meaning
in ``durable.conf``."""

from __future__ import annotations

import ast
import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.db import IntegrityError
from django.urls import reverse
from langgraph.types import Interrupt

from dashboard import access as console_access
from dashboard import settings as project_settings
from dashboard.celery import app as celery_app
from dashboard.present import interrupts as present_interrupts
from durable import audit, conf, engine, interrupt_payloads, sse
from durable.admin.scoping import TenantScoped
from durable.api import access as api_access
from durable.engine import checks, tasks
from durable.models import SEQ_ATTEMPTS, Run, RunEvent, Tenant, Thread, numbered
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


# -- a run request: built by each surface, checked once in the engine ---------------------

SOURCES = [
    p
    for root in ("durable", "dashboard")
    for p in Path(root).rglob("*.py")
    if "migrations" not in p.parts
]


def _written_in(text: str) -> set[str]:
    """The source files of ``durable`` and ``dashboard`` that hold ``text``."""
    return {str(p) for p in SOURCES if text in p.read_text()}


def test_each_rule_of_a_run_request_is_worded_in_one_module_only():
    checks_py = {"durable/engine/checks.py"}
    assert _written_in("runs graph {") == checks_py
    assert _written_in("Send either input or command") == checks_py
    assert _written_in("A command from a past checkpoint takes only resume") == checks_py
    assert _written_in("An answer given again forks the thread") == checks_py
    assert _written_in("Unknown stream mode(s)") == checks_py
    assert _written_in('== "messages-tuple"') == checks_py
    # The graph's options become Run fields in one function (an assistant's stored config
    # is checked by the same checks, not turned into a run).
    assert _written_in("graph_options(\n") | _written_in("graph_options(c") == {
        "durable/engine/options.py",
        "durable/engine/stored_assistants.py",
    }


def test_a_cron_keeps_the_options_of_a_run_request_and_every_fire_asks_them():
    from durable.engine import crons, requests

    assert set(crons.PAYLOAD_KEYS) == {"input", "stream_mode"} | (
        set(requests.OPTION_FIELDS) - {"stream_modes"}
    )
    fields = {f.name for f in dataclasses.fields(requests.RunRequest)}
    assert set(requests.OPTION_FIELDS) <= fields
    payload = {"input": {"x": 1}, "stream_mode": ["updates"], "durability": "exit"}
    asked = crons._request(payload, requested_by="cron:1")
    assert (asked.input, asked.stream_modes, asked.durability) == ({"x": 1}, ["updates"], "exit")
    assert asked.multitask_strategy == "enqueue"  # a cron's runs queue behind one another


def test_the_apis_body_becomes_one_run_request_with_every_option_it_names():
    from durable.api.schemas import RunCreate

    body = RunCreate.model_validate(
        {
            "assistant_id": "expense_approval",
            "command": {"resume": {"ab": 1}, "goto": "review"},
            "metadata": {"team": "a"},
            "config": {"tags": ["t"]},
            "context": {"user": "ada"},
            "webhook": "https://example.com/hook",
            "interrupt_before": "*",
            "interrupt_after": ["review"],
            "stream_mode": ["updates", "updates", "messages-tuple"],
            "multitask_strategy": "enqueue",
            "checkpoint_during": False,
            "after_seconds": 5,
            "checkpoint": {"checkpoint_id": "c1"},
        }
    )
    chosen = engine.RunAssistant("expense_approval", None, None, {"tags": ["t"]}, {"user": "a"})
    asked = body.to_request(chosen, "api-client")
    assert asked.kind == "answer_again"
    assert asked.resume == engine.Resume({"ab": 1}, goto="review")
    assert (asked.graph, asked.assistant, asked.config, asked.context) == (
        "expense_approval",
        chosen,
        {"tags": ["t"]},
        {"user": "a"},
    )
    assert asked.stream_modes == ["updates", "messages-tuple"]
    assert (asked.durability, asked.multitask_strategy, asked.after_seconds) == (
        "exit",
        "enqueue",
        5,
    )
    assert (asked.interrupt_before, asked.interrupt_after) == ("*", ["review"])
    assert (asked.webhook, asked.metadata, asked.requested_by, asked.checkpoint_id) == (
        "https://example.com/hook",
        {"team": "a"},
        "api-client",
        "c1",
    )


def test_the_engine_checks_a_request_the_same_for_every_surface():
    past = engine.RunRequest(graph="g", resume=engine.Resume("yes", goto="n"), checkpoint_id="c")
    with pytest.raises(engine.InvalidRequest) as refused:
        checks.check_request(past, None)
    assert refused.value.field == "goto"
    both = engine.RunRequest(graph="g", input={"a": 1}, resume=engine.Resume("yes"))
    with pytest.raises(engine.InvalidRequest, match="Send either input or command"):
        checks.check_request(both, None)
    # Agent Chat UI sends {} beside its command: that is no input.
    checks.check_request(both.replace(input={}), None)
    again = engine.RunRequest(
        resume=engine.Resume("yes"), checkpoint_id="c", multitask_strategy="enqueue"
    )
    with pytest.raises(engine.InvalidRequest) as refused:
        checks.check_request(again, None)
    assert refused.value.field == "multitask_strategy"


# The graph's saver writes on a connection of its own (as a worker's does).
@pytest.mark.django_db(transaction=True)
def test_a_thread_runs_its_own_graph_whichever_surface_asks():
    from tests.helpers.threads import at_interrupt

    thread = at_interrupt("expense_approval")
    said = f"Thread {thread.name!r} runs graph 'expense_approval', not 'parallel_review'."
    with pytest.raises(engine.InvalidRequest) as by_name:
        engine.start("parallel_review", {"document": "Lease"}, name=thread.name)
    with pytest.raises(engine.InvalidRequest) as by_request:
        engine.submit(
            engine.RunRequest(graph="parallel_review", resume=engine.Resume("y")), thread=thread
        )
    with pytest.raises(engine.InvalidRequest) as by_cron:
        engine.create_cron(
            "0 9 * * *",
            tenant=thread.tenant,
            assistant_id="parallel_review",
            thread=thread,
            payload={"input": {"document": "Lease"}},
        )
    for refused in (by_name, by_request, by_cron):
        assert (refused.value.field, refused.value.message) == ("graph", said)
    assert not thread.runs.exists()


# The graph's saver writes on a connection of its own (as a worker's does).
@pytest.mark.django_db(transaction=True)
def test_a_resume_records_once_whether_it_answers_by_interrupt_id():
    from durable.engine import requests
    from tests.helpers.threads import at_interrupt

    thread = at_interrupt("parallel_review")
    ids = [i.id for i in engine.pending_interrupts(thread)]
    assert len(ids) > 1
    answers = {i: {"approved": True} for i in ids}
    by_id = engine.resume(thread, answers, multitask_strategy="enqueue")
    assert by_id.command == {"resume": answers} and by_id.resume_by_id
    assert requests.answers_by_id(by_id) == answers
    assert requests.command(by_id).resume == answers
    single = at_interrupt("expense_approval")
    plain = engine.resume(single, {"approved": True})
    assert not plain.resume_by_id and requests.answers_by_id(plain) is None
    assert requests.command(plain).resume == {"approved": True}
    # The worker reads the codec, never the stored command itself.
    assert "run.command" not in Path("durable/engine/execution.py").read_text()


HITL_REQUEST = {
    "action_requests": [{"name": "pay", "args": {}}, {"name": "notify", "args": {}}],
    "review_configs": [{"action_name": "pay", "allowed_decisions": ["approve"]}],
}
HUMAN_INTERRUPT = {"action_request": {"action": "send", "args": {}}, "config": {}}
PAYLOADS = [
    (HITL_REQUEST, interrupt_payloads.HITL, "pay"),
    ({"action_requests": [{"name": "pay"}]}, interrupt_payloads.GENERIC, None),
    ({"action_requests": {"name": "pay"}, "review_configs": []}, interrupt_payloads.GENERIC, None),
    (HUMAN_INTERRUPT, interrupt_payloads.HUMAN, "send"),
    ([HUMAN_INTERRUPT], interrupt_payloads.HUMAN, "send"),
    ([HUMAN_INTERRUPT, HUMAN_INTERRUPT], interrupt_payloads.GENERIC, None),
    ({"action_request": {"action": "send"}, "config": True}, interrupt_payloads.GENERIC, None),
    ({"question": "Approve?"}, interrupt_payloads.GENERIC, None),
    ("Approve?", interrupt_payloads.GENERIC, None),
    ([], interrupt_payloads.GENERIC, None),
]


@pytest.mark.django_db
def test_an_interrupt_payloads_kind_and_action_are_decided_once_in_python_and_in_sql():
    # The console's pages, the audit of an answer and the inbox's SQL read one rule.
    assert present_interrupts.kind_of is interrupt_payloads.kind_of
    thread = engine.create_thread("expense_approval")
    for value, kind, action in PAYLOADS:
        run = Run.objects.create(
            thread=thread,
            graph=thread.graph,
            kind="start",
            interrupts=[{"id": "i", "value": value}],
        )
        assert interrupt_payloads.kind_of(value) == kind, value
        assert (interrupt_payloads.action_names(value) or [None])[0] == action, value
        in_sql = (
            Run.objects.filter(pk=run.pk)
            .annotate(name=interrupt_payloads.action_name("interrupts__0__value"))
            .values_list("name", flat=True)
            .get()
        )
        assert in_sql == action, value
    answered = audit.answered(
        [Interrupt(value=[HUMAN_INTERRUPT], id="i")], [{"type": "accept", "args": None}], False
    )
    assert answered == [{"interrupt_id": "i", "decision": "accept", "action": "send"}]


# The Agent Server's ``Run`` (``langgraph-api`` 0.16.7's openapi.json): its run statuses
# and multitask strategies.
AGENT_SERVER_RUN_STATUSES = {"pending", "running", "error", "success", "timeout", "interrupted"}
AGENT_SERVER_MULTITASK = {"reject", "rollback", "interrupt", "enqueue"}


@pytest.mark.django_db
def test_a_run_is_sent_as_the_openapi_documents_run_schema_declares_it(client, api_key):
    schema = client.get("/api/openapi.json").json()["components"]["schemas"]["Run"]
    assert set(schema["properties"]["status"]["enum"]) <= AGENT_SERVER_RUN_STATUSES
    assert set(schema["properties"]["multitask_strategy"]["enum"]) == AGENT_SERVER_MULTITASK
    stopped = made_run(status=Run.Status.CANCELLED)
    answer = client.get(
        f"/api/threads/{stopped.thread.name}/runs/{stopped.pk}", headers={"x-api-key": api_key}
    ).json()
    assert set(answer) == set(schema["properties"]) == set(schema["required"])
    assert answer["status"] == "interrupted"
    assert answer["assistant_version"] is None
    listed = client.get(
        f"/api/threads/{stopped.thread.name}/runs", headers={"x-api-key": api_key}
    ).json()
    assert listed == [answer]


@pytest.mark.django_db
def test_the_api_the_console_and_the_admin_scope_to_a_tenant_by_one_queryset_method(
    rf, django_assert_num_queries
):
    mine, other = Tenant.default(), Tenant.objects.create(slug="other", name="Other")
    kept = engine.create_thread("expense_approval", tenant=mine)
    engine.create_thread("expense_approval", tenant=other)
    request = rf.get("/")
    request.tenant, request.auth = mine, SimpleNamespace(tenant=mine)
    for found in (
        api_access.find_thread(request, kept.name),
        console_access.threads(request).get(),
    ):
        assert found == kept
        with django_assert_num_queries(0):
            assert found.tenant is mine  # not read again, not set by hand
    assert list(TenantScoped().scope(Thread.objects.all(), Tenant.objects.filter(pk=mine.pk))) == [
        kept
    ]
    assert list(Run.objects.of_tenants(Tenant.objects.filter(pk=other.pk))) == []
    assert list(Thread.objects.of_tenants(None)) == []


def test_the_engine_never_imports_the_reports_that_read_it():
    engine_dir = Path(engine.__file__).parent
    importing = []
    for module in sorted(engine_dir.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            if any(n == "durable.reports" or n.startswith("durable.reports.") for n in names):
                importing.append(module.name)
    assert importing == []
    assert not hasattr(engine, "migration") and not hasattr(engine, "diagnose")


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
