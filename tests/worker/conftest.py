"""Fixtures of the worker tests: ``own_workers`` for a module that starts worker processes
of its own, and the JS SDK's (``tests.helpers.js_sdk``)."""

from __future__ import annotations

import pytest

from tests.helpers import js_sdk as js


@pytest.fixture(scope="module")
def own_workers(worker):
    """The session's worker stopped while the module runs (it would take the runs of the
    workers the module starts itself), and started again afterwards."""
    worker.stop()
    yield
    worker.start()


@pytest.fixture(scope="session")
def js_sdk():
    """The JS SDK installed in ``tests/js/node_modules`` (``npm ci`` when needed)."""
    js.install()
    return js


@pytest.fixture(scope="module")
def js_results(request, js_sdk, web, worker, django_db_blocker, tmp_path_factory):
    """What each scenario of the module's ``JS_SCRIPT`` returned, run once for the module
    against the live server and worker, each scenario on a tenant of its own. The first
    test's flush (``transaction=True``) removes the tenants and what they made."""
    script = request.module.JS_SCRIPT
    worker.resume()  # an earlier test of a folder without a worker may have paused it
    prefix = script.removesuffix(".mjs").replace("_", "-")
    with django_db_blocker.unblock():
        keys = js_sdk.scenario_keys(js_sdk.scenario_names(script), prefix)
    return js_sdk.run_script(script, f"{web.url}/api", keys, tmp_path_factory.mktemp("js"))
