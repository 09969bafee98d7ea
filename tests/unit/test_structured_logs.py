"""Log lines as the web process and the workers write them (``durable.logcontext``): one
JSON object a line with the run's fields (the node's too, logged from inside a real
LangGraph node), or plain text; sensitive values masked either way; and the command the
run page shows finds a run's lines."""

from __future__ import annotations

import io
import json
import logging
import logging.config
import shutil
import subprocess
from datetime import datetime

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from durable import engine, logcontext
from durable.engine.execution import execute
from durable.models import Role, Run
from durable.redaction import MASK, install_log_filter
from tests.helpers.log_graphs import LINE, build_logged
from tests.helpers.threads import made_run
from tests.helpers.users import member

RUN = {"run_id": 7, "thread_id": "order-12", "tenant": "acme", "graph": "logged", "attempt": 2}


@pytest.fixture
def written(request):
    """``(logger, output)``: a logger whose one handler writes to ``output`` (a StringIO)
    set up as the worker's are (``logcontext.install``, ``install_log_filter``), in the
    form the test's ``kind`` parameter names."""

    def make(kind: str) -> tuple[logging.Logger, io.StringIO]:
        output = io.StringIO()
        logger = logging.getLogger(f"tests.structured.{request.node.name}.{kind}")
        logger.propagate = False
        logger.setLevel(logging.INFO)
        logger.addHandler(logging.StreamHandler(output))
        logcontext.install(logger, kind)
        install_log_filter(logger)
        request.addfinalizer(lambda: logger.handlers.clear())
        return logger, output

    return make


def _run_logged_graph(logger: logging.Logger) -> None:
    """Run the ``logged`` graph in this process, its module logger writing through
    ``logger``'s handler, inside the run's bound fields."""
    graph_logger = logging.getLogger("tests.helpers.log_graphs")
    graph_logger.addHandler(logger.handlers[0])
    graph_logger.setLevel(logging.INFO)
    try:
        with logcontext.bound(**RUN):
            logger.info("run %s starts", RUN["run_id"])
            build_logged().compile().invoke({})
            logger.info("run %s ended", RUN["run_id"])
    finally:
        graph_logger.removeHandler(logger.handlers[0])


def test_json_lines_carry_the_run_and_the_node(written):
    logger, output = written("json")
    _run_logged_graph(logger)
    logger.info("outside any run")

    lines = [json.loads(line) for line in output.getvalue().splitlines()]
    assert [line["message"] for line in lines] == [
        "run 7 starts",
        LINE.format("plan"),
        LINE.format("act"),
        "run 7 ended",
        "outside any run",
    ]
    for line in lines[:4]:
        assert {k: line[k] for k in RUN} == RUN
        assert line["level"] == "INFO"
        assert datetime.fromisoformat(line["timestamp"]).tzinfo is not None
    assert lines[1]["node"] == "plan" and lines[1]["logger"] == "tests.helpers.log_graphs"
    assert lines[2]["node"] == "act"
    assert "node" not in lines[0] and "node" not in lines[3]
    # After the run, nothing of it is left on the next line.
    assert not set(logcontext.FIELDS) & set(lines[4])


def test_text_lines_are_plain_and_end_with_the_run(written):
    logger, output = written("text")
    _run_logged_graph(logger)
    logger.info("outside any run")

    text = output.getvalue()
    lines = text.splitlines()
    with pytest.raises(json.JSONDecodeError):
        json.loads(lines[0])
    assert "INFO" in lines[0] and "run 7 starts" in lines[0]
    assert lines[1].endswith(
        "plan ran [run_id=7 thread_id=order-12 tenant=acme graph=logged node=plan attempt=2]"
    )
    assert lines[-1].endswith(": outside any run")


def test_a_failed_line_keeps_its_traceback_as_one_json_object(written):
    logger, output = written("json")
    with logcontext.bound(run_id=9):
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("run 9 failed")
    [line] = output.getvalue().splitlines()
    record = json.loads(line)
    assert record["run_id"] == 9 and record["level"] == "ERROR"
    assert "Traceback" in record["exc_info"] and "ValueError: boom" in record["exc_info"]


@pytest.mark.parametrize("kind", logcontext.KINDS)
def test_sensitive_values_stay_masked_in_either_form(written, kind):
    logger, output = written(kind)
    secret = "sk-L0GG3D"
    with logcontext.bound(run_id=3):
        logger.warning("wrote %s", {"api_key": secret, "amount": 42})
        logger.warning("calling with password=%s", secret)
        # A field given as ``extra`` is a JSON field of its own: masked by its name.
        logger.warning("a field", extra={"token": secret, "customer": "ada"})
        try:
            raise RuntimeError(f"api_key={secret}")
        except RuntimeError:
            logger.exception("failed")
    text = output.getvalue()
    assert secret not in text
    assert MASK in text
    if kind == "json":
        records = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        assert records[0]["message"] == "wrote {'api_key': '[redacted]', 'amount': 42}"
        assert records[2]["token"] == MASK and records[2]["customer"] == "ada"
        assert all(r["run_id"] == 3 for r in records)


def test_the_log_format_setting():
    assert settings.LOGGING["formatters"]["console"]["kind"] == settings.DURABLE_LOG_FORMAT
    assert isinstance(logcontext.formatter("json"), logcontext.JsonFormatter)
    assert isinstance(logcontext.formatter("text"), logcontext.TextFormatter)
    with pytest.raises(ValueError, match="DURABLE_LOG_FORMAT must be one of json, text"):
        logcontext.formatter("xml")


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")
@pytest.mark.parametrize("kind", logcontext.KINDS)
def test_the_query_finds_a_runs_lines_and_no_other(written, kind):
    logger, output = written(kind)
    print("a line that is not JSON, as Celery's banner", file=output)
    for run_id in (7, 70, 17):
        with logcontext.bound(run_id=run_id):
            logger.info("line of run %s", run_id)
    found = subprocess.run(
        logcontext.query(7, kind),
        shell=True,
        input=output.getvalue(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert len(found) == 1 and "line of run 7" in found[0]


@pytest.mark.django_db(transaction=True)
def test_the_run_page_shows_how_to_find_its_log_lines(client):
    run = made_run()
    page = client.get(reverse("run", args=[run.pk])).content.decode()
    shown = logcontext.query(run.pk, settings.DURABLE_LOG_FORMAT)
    escaped = shown.replace("'", "&#x27;")
    assert 'data-testid="run-logs">Its log lines' in page
    assert f"<code>{escaped}</code>" in page


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("modes", [None, ["events"]], ids=["stream", "astream_events"])
def test_a_run_executed_by_the_engine_stamps_its_node_lines(written, modes):
    """The engine binds the run's fields (``execute``, as a worker calls it), whether it
    streams the graph synchronously or through asyncio (``astream_events``)."""
    logger, output = written("json")
    root = logging.getLogger()
    root.addHandler(logger.handlers[0])
    try:
        run = engine.start("logged", {}, stream_modes=modes)
        execute(run.pk, worker="here")
    finally:
        root.removeHandler(logger.handlers[0])
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCESS
    lines = [json.loads(line) for line in output.getvalue().splitlines()]
    nodes = {line["message"]: line for line in lines if line.get("node")}
    assert set(nodes) == {LINE.format("plan"), LINE.format("act")}
    for line in nodes.values():
        assert line["run_id"] == run.pk and line["graph"] == "logged" and line["attempt"] == 1
        assert line["thread_id"] == run.thread.name and line["tenant"] == "default"
    assert nodes[LINE.format("act")]["node"] == "act"


@pytest.mark.django_db
def test_a_refusal_is_logged_without_a_traceback_and_a_server_error_with_one():
    """Found by hand: a viewer's answer (403, Django's ``PermissionDenied``) wrote a
    whole traceback in the server's log, as a server fault would."""
    output = io.StringIO()
    config = {**settings.LOGGING, "root": {"handlers": [], "level": "INFO"}}
    config["handlers"] = {"console": {**config["handlers"]["console"], "stream": output}}
    config["loggers"] = {"django.request": {"handlers": ["console"], "level": "INFO"}}
    logging.config.dictConfig(config)
    try:
        viewer = Client()
        viewer.force_login(member("vera", role=Role.VIEWER))
        thread = engine.create_thread("expense_approval")
        response = viewer.post(reverse("inbox-answer", args=[thread.pk]), {"reason": "r"})
        assert response.status_code == 403
        logging.getLogger("django.request").error(
            "Internal Server Error: /x", exc_info=ValueError("boom"), extra={"status_code": 500}
        )
    finally:
        logging.config.dictConfig(settings.LOGGING)
    lines = output.getvalue()
    assert "Forbidden (Permission denied)" in lines
    assert "PermissionDenied" not in lines
    assert "ValueError: boom" in lines
