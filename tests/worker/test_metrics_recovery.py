"""``GET /metrics`` while a worker dies mid-run: its lease counted, then expired, then its
run requeued by another worker's reaper, which counts the recovery in the machine's
multiprocess files.

This module starts its own worker processes, so the session's worker is stopped while
it runs (it would take the runs) and started again afterwards.
"""

from __future__ import annotations

import pytest
from django.conf import settings
from prometheus_client.multiprocess import MultiProcessCollector

from durable.models import Run
from tests.helpers.graphs import release
from tests.helpers.processes import WorkerProcess
from tests.helpers.runs import finished, probe, slow_started
from tests.helpers.waiting import wait_for
from tests.worker.test_metrics import grew, scrape, value

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def start_worker(name: str, directory) -> WorkerProcess:
    env = {"PROMETHEUS_MULTIPROC_DIR": str(directory)}
    log = settings.VAR_DIR / f"test-worker-{name}.log"
    return WorkerProcess(log, name, concurrency=1, env=env).start()


def test_a_dead_workers_lease_expires_and_its_run_counts_as_recovered(own_workers, web, tmp_path):
    files = tmp_path / "prometheus"
    files.mkdir()
    steps = tmp_path / "probe"
    steps.mkdir()
    before = scrape(web)
    doomed = start_worker("metrics-doomed", files)
    run = probe(steps)
    slow_started(run, steps)
    assert value(scrape(web), "durable_worker_leases", worker=doomed.hostname) == 1

    doomed.kill()
    wait_for(
        lambda: value(scrape(web), "durable_leases_expired") == 1,
        message="the dead worker's lease counted expired",
    )
    assert value(scrape(web), "durable_worker_leases", worker=doomed.hostname) == 0
    release(steps)
    rescuer = start_worker("metrics-rescuer", files)
    try:
        run = finished(run)
    finally:
        rescuer.stop()
    assert run.status == Run.Status.SUCCESS

    after = scrape(web)
    assert grew(before, after, "durable_runs_requeued_total", graph="probe") == 1
    assert value(after, "durable_leases_expired") == 0
    # The rescuer's reaper counted its recovery in the files its machine's web process
    # would serve in multiprocess mode.
    recorded = {
        sample.name: sample.value
        for family in MultiProcessCollector(None, path=str(files)).collect()
        for sample in family.samples
    }
    assert recorded["durable_reaper_recovered_total"] == 1
