"""The Node runtime of JS graphs, a real Node process started from the project's install:
a single .ts file with no package.json loads, a graph with a syntax error is a clear
error naming its file while the others still load, a killed process is started again,
and without the setting nothing starts."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from durable import js
from durable.js import process

ROOT = Path(__file__).resolve().parents[2]
GRAPHS = ROOT / "tests" / "helpers" / "js_graphs"


@pytest.fixture(scope="module", autouse=True)
def _installed():
    # What `make test` does first; here too, so this module runs alone on a clean clone.
    subprocess.run(["make", "-s", "js-runtime"], cwd=ROOT, check=True, timeout=600)


@pytest.fixture
def registered(settings):
    settings.DURABLE_JS_GRAPHS = {
        "counter": f"{GRAPHS / 'counter.ts'}:graph",
        "broken": f"{GRAPHS / 'broken.mjs'}:graph",
        "approval": f"{GRAPHS / 'approval.ts'}:graph",
        "fails": f"{GRAPHS / 'fails.mjs'}:graph",
    }
    yield
    if process._runtime is not None:
        process._runtime.stop()
        process._runtime = None


def test_a_single_ts_file_loads_and_draws(registered):
    assert js.js_graph_names() == ["approval", "broken", "counter", "fails"]
    drawing = js.request("graph", graph="counter")
    assert [node["id"] for node in drawing["nodes"]] == ["__start__", "bump", "double", "__end__"]
    edges = {(edge["source"], edge["target"]) for edge in drawing["edges"]}
    assert edges == {("__start__", "bump"), ("bump", "double"), ("double", "__end__")}


def test_a_syntax_error_is_named_and_the_others_load(registered):
    errors = js.load_errors()
    assert list(errors) == ["broken"]
    assert "broken.mjs" in errors["broken"] and "SyntaxError" in errors["broken"]
    with pytest.raises(js.JSGraphError, match="graph broken failed to load"):
        js.request("graph", graph="broken")
    assert js.request("nodes", graph="counter") == ["__start__", "bump", "double"]


def test_a_killed_node_process_is_started_again(registered):
    first = js.runtime().proc.pid
    os.kill(first, signal.SIGKILL)
    js.runtime().proc.wait(timeout=10)
    assert js.request("nodes", graph="counter") == ["__start__", "bump", "double"]
    assert js.runtime().proc.pid != first


def test_nothing_starts_without_the_setting(settings):
    settings.DURABLE_JS_GRAPHS = {}
    assert js.js_graph_names() == []
    assert js.load_errors() == {}
    assert process._runtime is None


@pytest.mark.django_db(transaction=True)
def test_a_js_run_checkpoints_through_the_project_saver(registered):
    """The Node process runs the graph with a checkpointer answered here: its checkpoints
    are rows of the saver's tables, read back as any thread's state."""
    from durable.js.saver_calls import saver_calls
    from durable.persistence.checkpoint import DjangoSaver

    saver = DjangoSaver()
    config = {"configurable": {"thread_id": "js-thread-1"}}
    values = js.request(
        "invoke", calls=saver_calls(saver), graph="counter", input={"count": 1}, config=config
    )
    assert values == {"count": 4, "log": ["bump at 1", "double"]}
    latest = saver.get_tuple(config)
    assert latest.checkpoint["channel_values"]["count"] == 4
    history = list(saver.list(config))
    assert [item.metadata["step"] for item in history] == [2, 1, 0, -1]
    # A second run on the thread goes on from the saved state.
    values = js.request(
        "invoke", calls=saver_calls(saver), graph="counter", input={"count": 0}, config=config
    )
    assert values["count"] == 10


@pytest.mark.django_db(transaction=True)
def test_a_js_interrupt_is_saved_and_resumed(registered):
    """interrupt() in a JS node: its pending write goes through the saver, the state read
    back shows the interrupt with its id and value, and Command(resume=...) goes on."""
    from durable.js.saver_calls import saver_calls
    from durable.persistence.checkpoint import DjangoSaver

    calls = saver_calls(DjangoSaver())
    config = {"configurable": {"thread_id": "js-thread-2"}}
    js.request("invoke", calls=calls, graph="approval", input={"amount": 30}, config=config)
    state = js.request("state", calls=calls, graph="approval", config=config)
    assert state["next"] == ["review"]
    [task] = state["tasks"]
    [pending] = task["interrupts"]
    assert pending["value"] == {"question": "approve?", "amount": 30}
    assert pending["id"]
    values = js.request(
        "invoke", calls=calls, graph="approval", command={"resume": "yes"}, config=config
    )
    assert values == {"amount": 30, "decision": "yes", "paid": True}
    state = js.request("state", calls=calls, graph="approval", config=config)
    assert state["next"] == [] and state["tasks"] == []


@pytest.mark.django_db(transaction=True)
def test_a_js_node_that_throws_reports_its_message(registered):
    from durable.js.saver_calls import saver_calls
    from durable.persistence.checkpoint import DjangoSaver

    config = {"configurable": {"thread_id": "js-thread-3"}}
    with pytest.raises(js.JSGraphError, match="card declined by the JS node"):
        js.request(
            "invoke", calls=saver_calls(DjangoSaver()), graph="fails", input={"n": 1}, config=config
        )
    # The process serves the next request.
    assert js.request("nodes", graph="counter") == ["__start__", "bump", "double"]
