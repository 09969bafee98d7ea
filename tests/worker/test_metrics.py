"""``GET /metrics`` from the real web server after runs the real worker executed: the
counts those runs caused, and nothing else."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from durable import engine
from durable.models import Checkpoint, Run, Thread
from tests.helpers.graphs import release
from tests.helpers.runs import finished, probe
from tests.helpers.threads import EXPENSE
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

APPROVE = {"decisions": [{"type": "approve"}]}
EXPENSE_LABELS = {"graph": "expense_approval", "tenant": "default"}
PROBE_LABELS = {"graph": "probe", "tenant": "default"}


def scrape(web) -> dict[str, list]:
    """One scrape of the web server over loopback: ``{sample name: [(labels, value)]}``."""
    response = httpx.get(f"{web.url}/metrics", timeout=30)
    assert response.status_code == 200, response.text
    samples: dict[str, list] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def value(samples: dict, name: str, **labels) -> float:
    """The one sample of ``name`` whose labels include ``labels`` (0 when there is none)."""
    found = [v for have, v in samples.get(name, []) if labels.items() <= have.items()]
    assert len(found) <= 1, (name, labels, found)
    return found[0] if found else 0


def grew(before: dict, after: dict, name: str, **labels) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def test_metrics_count_the_runs_a_real_worker_ran(worker, web, tmp_path):
    before = scrape(web)

    asked = finished(engine.start("expense_approval", EXPENSE))
    assert asked.status == Run.Status.INTERRUPTED
    release(tmp_path)
    probed = finished(probe(tmp_path))
    assert probed.status == Run.Status.SUCCESS

    during = scrape(web)
    assert grew(before, during, "durable_runs_requested_total", **EXPENSE_LABELS) == 1
    assert grew(before, during, "durable_runs_started_total", **EXPENSE_LABELS) == 1
    assert (
        grew(before, during, "durable_runs_ended_total", **EXPENSE_LABELS, status="interrupted")
        == 1
    )
    assert grew(before, during, "durable_runs_ended_total", **PROBE_LABELS, status="success") == 1
    assert grew(before, during, "durable_runs_ended_total", **PROBE_LABELS, status="error") == 0
    assert grew(before, during, "durable_run_duration_seconds_count", **PROBE_LABELS) == 1
    assert grew(before, during, "durable_run_queue_wait_seconds_count", **PROBE_LABELS) == 1
    took = (probed.ended_at - probed.started_at).total_seconds()
    assert grew(before, during, "durable_run_duration_seconds_sum", **PROBE_LABELS) == (
        pytest.approx(took, abs=0.001)
    )
    # The interrupted thread waits for its answer.
    assert value(during, "durable_interrupts_waiting", **EXPENSE_LABELS) == 1
    assert value(during, "durable_interrupt_oldest_age_seconds", **EXPENSE_LABELS) >= 0
    # The probe's super-steps are the loop checkpoints it saved.
    thread_id = Thread.objects.get(pk=probed.thread_pk).thread_id
    steps = Checkpoint.objects.filter(
        thread_id=thread_id, checkpoint_ns="", metadata__source="loop"
    ).count()
    assert steps >= 2
    assert grew(before, during, "durable_run_supersteps_gcount", **PROBE_LABELS) == 1
    assert grew(before, during, "durable_run_supersteps_gsum", **PROBE_LABELS) == steps
    # Its checkpoints are stored, and no lease outlives the runs.
    assert value(during, "durable_checkpoints", **PROBE_LABELS) == (
        Checkpoint.objects.filter(thread_id=thread_id).count()
    )
    assert value(during, "durable_checkpoint_blob_bytes", **PROBE_LABELS) > 0
    assert value(during, "durable_leases_expired") == 0
    assert value(during, "durable_worker_leases", worker=probed.worker) == 0

    thread = Thread.objects.get(pk=asked.thread_pk)
    answered = finished(engine.resume(thread, APPROVE))
    assert answered.status == Run.Status.SUCCESS

    after = scrape(web)
    assert grew(during, after, "durable_runs_requested_total", **EXPENSE_LABELS) == 1
    assert grew(during, after, "durable_runs_ended_total", **EXPENSE_LABELS, status="success") == 1
    assert grew(before, after, "durable_run_duration_seconds_count", **EXPENSE_LABELS) == 2
    assert value(after, "durable_interrupts_waiting", **EXPENSE_LABELS) == 0


def test_an_open_event_stream_is_counted_until_it_ends(worker, web, api_key, tmp_path):
    run = probe(tmp_path)
    thread = Thread.objects.get(pk=run.thread_pk)
    assert value(scrape(web), "durable_event_streams_open") == 0
    url = f"{web.url}/api/threads/{thread.name}/runs/{run.pk}/stream"
    with httpx.stream("GET", url, headers={"x-api-key": api_key}, timeout=60) as stream:
        assert stream.status_code == 200
        wait_for(
            lambda: value(scrape(web), "durable_event_streams_open") == 1,
            message="the stream counted open",
        )
        release(tmp_path)
        for _ in stream.iter_bytes():
            pass  # to the run's end, which closes the stream
    wait_for(
        lambda: value(scrape(web), "durable_event_streams_open") == 0,
        message="the stream counted closed",
    )
    assert finished(run).status == Run.Status.SUCCESS
