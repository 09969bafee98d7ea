"""Running the fault drills: each starts a run of the drill graph (``durable.drills.graph``)
through the engine, like any run, on the deployment's own workers; waits for it; checks
the promise against the run's row and the node executions the graph counted; and the
drill threads are deleted afterwards. The report is kept (``DrillReport``).

Drills run one after the other (a worker killed by one must not disturb another), under
the drill tenant (``DRILL_TENANT``, made on demand): a tenant's threads are never read
or touched.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from datetime import datetime

from django.db import connection
from django.db.models import F
from django.utils import timezone

from durable import engine
from durable.drills import graph as drill
from durable.engine import queue
from durable.graphs import DRILL_GRAPH
from durable.models import DrillExecution, DrillReport, Run, Tenant, Thread

logger = logging.getLogger(__name__)

DRILL_TENANT = "durable-drills"
# What each drill checks, in the order they run: the drain, which takes a worker away,
# comes last.
PROMISES = {
    "kill": "a worker process killed mid-node: the run resumes from its last checkpoint, "
    "and finished nodes do not run again",
    "timeout": "a node over its TimeoutPolicy: cancelled, and its error_handler goes on",
    "retry": "a RetryPolicy exhausted: every attempt ran, then the node's error_handler",
    "database": "a database connection dropped mid-run: the run goes on",
    "drain": "a worker drained by SIGTERM: the run goes on on another worker",
}
DRILLS = list(PROMISES)
POLL_SECONDS = 0.2
CANNOT_PING = DrillReport.CANNOT_PING
PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


class UnknownDrill(ValueError):
    def __init__(self, name: str):
        super().__init__(f"Unknown drill {name!r}. Drills: {', '.join(DRILLS)}.")


@dataclass
class Result:
    """One drill's outcome; ``seconds``: how long recovery took (from the fault to the
    run going on), or ``None``."""

    name: str
    outcome: str
    seconds: float | None = None
    detail: str = ""


def drill_tenant() -> Tenant:
    tenant, _ = Tenant.objects.get_or_create(slug=DRILL_TENANT, defaults={"name": "Fault drills"})
    return tenant


def run_drills(
    names: list[str] | None = None, *, timeout: float = 60.0, requested_by: str = ""
) -> DrillReport:
    """Run the drills ``names`` (default: all, ``DRILLS``), each waiting at most
    ``timeout`` seconds for its run to end; record and return the report. Raises
    ``UnknownDrill`` for a name not in ``DRILLS``, before anything runs."""
    for name in names or ():
        if name not in PROMISES:
            raise UnknownDrill(name)
    chosen = [name for name in DRILLS if not names or name in names]
    tenant = drill_tenant()
    clean_up(tenant)  # what an interrupted drill may have left
    started = timezone.now()
    workers = queue.workers_answering()
    counted = None if workers is None else len(workers)
    results = []
    try:
        for name in chosen:
            logger.info("drill %s: %s", name, PROMISES[name])
            results.append(_drill(name, tenant, timeout, counted, requested_by))
            logger.info("drill %s: %s", name, results[-1])
    finally:
        clean_up(tenant)
    return DrillReport.objects.create(
        started_at=started,
        finished_at=timezone.now(),
        requested_by=requested_by,
        workers=counted,
        passed=all(r.outcome != FAILED for r in results),
        results=[asdict(r) for r in results],
    )


def _skip_reason(name: str, workers: int | None) -> str:
    """Why drill ``name`` cannot run here, or ``""``; ``workers``: how many answered
    Celery's ping, ``None`` when the broker cannot ping them."""
    if name == "database" and connection.vendor != "postgresql":
        return "needs PostgreSQL (SQLite has no server connection to drop)"
    if name == "drain" and workers is None:
        return f"needs 2 workers, which cannot be counted: {CANNOT_PING}"
    if name == "drain" and workers < 2:
        return f"needs 2 workers ({workers} answered Celery's ping)"
    return ""


def _drill(
    name: str, tenant: Tenant, timeout: float, workers: int | None, requested_by: str
) -> Result:
    if reason := _skip_reason(name, workers):
        return Result(name, SKIPPED, detail=reason)
    run = engine.start(
        DRILL_GRAPH,
        {"drill": name},
        tenant=tenant,
        durability="sync",  # every super-step saved: nothing finished may run again
        requested_by=requested_by or "drill",
    )
    run = _ended(run, timeout)
    if run.status in Run.ACTIVE:
        return Result(name, FAILED, detail=_stuck(run, timeout))
    if run.status != Run.Status.SUCCESS:
        error = f": {run.error_type}: {run.error_message}" if run.error_type else ""
        return Result(name, FAILED, detail=f"run ended {run.status}{error}")
    runs = defaultdict(list)
    for row in DrillExecution.objects.filter(thread_id=run.thread.thread_id).order_by("at", "pk"):
        runs[row.node].append(row)
    return CHECKS[name](name, run, runs)


def _ended(run: Run, timeout: float) -> Run:
    deadline = time.monotonic() + timeout
    while True:
        run.refresh_from_db()
        if run.status not in Run.ACTIVE or time.monotonic() >= deadline:
            return run
        time.sleep(POLL_SECONDS)


def _stuck(run: Run, timeout: float) -> str:
    """Why a run still active after ``timeout`` seconds is, as a sentence."""
    said = f"run still {run.status} after {timeout:g} s"
    if run.status == Run.Status.PENDING:
        return f"{said}: no worker took it"
    expired = run.lease_expires_at and run.lease_expires_at < timezone.now()
    if expired:
        ago = (timezone.now() - run.lease_expires_at).total_seconds()
        return (
            f"{said}: no worker recovered it (the lease of {run.worker or '?'} expired "
            f"{ago:.0f} s ago; is the reaper off?)"
        )
    return f"{said}: {run.worker or '?'} holds it and has not finished (attempt {run.attempt})"


def _seconds(start: datetime, end: datetime) -> float:
    return round((end - start).total_seconds(), 2)


def _counts(runs: dict, expected: dict[str, int]) -> str:
    """The first node whose execution count is not the expected one, as a sentence."""
    for node, count in expected.items():
        if len(runs[node]) != count:
            return f"{node} ran {len(runs[node])} time(s), expected {count}"
    return ""


def _check_kill(name: str, run: Run, runs: dict) -> Result:
    expected = {"kill_before": 1, "kill_sibling": 1, "kill_victim": 2, "kill_after": 1}
    if wrong := _counts(runs, expected):
        return Result(name, FAILED, detail=wrong)
    killed, again = runs["kill_victim"]
    detail = (
        f"attempt {killed.attempt} killed in process {killed.pid} on {killed.worker}; "
        f"attempt {again.attempt} went on from the last checkpoint on {again.worker}, "
        "without running kill_before or kill_sibling again"
    )
    return Result(name, PASSED, _seconds(killed.at, again.at), detail)


def _check_drain(name: str, run: Run, runs: dict) -> Result:
    if wrong := _counts(runs, {"drain_before": 1, "drain_leave": 1, "drain_after": 1}):
        return Result(name, FAILED, detail=wrong)
    (left,), (after,) = runs["drain_leave"], runs["drain_after"]
    if after.worker == left.worker:
        return Result(name, FAILED, detail=f"drain_after ran on the drained worker {left.worker}")
    detail = f"{left.worker} drained after drain_leave; {after.worker} ran drain_after"
    return Result(name, PASSED, _seconds(left.at, after.at), detail)


def _check_database(name: str, run: Run, runs: dict) -> Result:
    if wrong := _counts(runs, {"database_before": 1, "database_after": 1}):
        return Result(name, FAILED, detail=wrong)
    (dropped,) = runs["database_dropped"] or [None]
    if dropped is None or not dropped.detail.get("backends"):
        return Result(name, FAILED, detail="no connection of the worker was dropped")
    detail = f"{dropped.detail['backends']} connection(s) of process {dropped.pid} terminated"
    return Result(name, PASSED, _seconds(dropped.at, runs["database_after"][0].at), detail)


def _check_timeout(name: str, run: Run, runs: dict) -> Result:
    if wrong := _counts(runs, {"timeout_sleeper": 1, "timeout_handled": 1}):
        return Result(name, FAILED, detail=wrong)
    (slept,), (handled,) = runs["timeout_sleeper"], runs["timeout_handled"]
    error = handled.detail.get("error", "")
    detail = f"cancelled after its {drill.TIMEOUT:g} s TimeoutPolicy ({error}); handler ran"
    return Result(name, PASSED, _seconds(slept.at, handled.at), detail)


def _check_retry(name: str, run: Run, runs: dict) -> Result:
    expected = {"retry_flaky": drill.RETRY_ATTEMPTS, "retry_fallback": 1}
    if wrong := _counts(runs, expected):
        return Result(name, FAILED, detail=wrong)
    first, handled = runs["retry_flaky"][0], runs["retry_fallback"][0]
    detail = f"{drill.RETRY_ATTEMPTS} attempts, then the error_handler"
    return Result(name, PASSED, _seconds(first.at, handled.at), detail)


CHECKS = {
    "kill": _check_kill,
    "drain": _check_drain,
    "database": _check_database,
    "timeout": _check_timeout,
    "retry": _check_retry,
}


def clean_up(tenant: Tenant) -> int:
    """Delete every thread of the drill tenant, and the node executions the drills
    counted. A run still active (its drill failed) is ended first: its worker, if any,
    loses its claim (``records.held``) and stops. Returns how many threads."""
    Run.objects.filter(thread__tenant=tenant, status__in=Run.ACTIVE).update(
        status=Run.Status.CANCELLED, attempt=F("attempt") + 1, ended_at=timezone.now()
    )
    threads = list(Thread.objects.filter(tenant=tenant))
    for thread in threads:
        engine.delete_thread(thread, requested_by="drill", reason="fault drill cleanup")
    DrillExecution.objects.filter(thread_id__in=[t.thread_id for t in threads]).delete()
    return len(threads)


def last_reports(count: int = 5) -> list[DrillReport]:
    """The newest ``count`` drill reports, newest first."""
    return list(DrillReport.objects.order_by("-started_at", "-pk")[:count])


def report_text(report: DrillReport) -> str:
    """The report as ``manage.py drill`` prints it: one line per drill."""
    lines = [
        f"Fault drills at {report.started_at:%Y-%m-%d %H:%M:%S} UTC, "
        f"{report.workers_said}: {report.verdict.upper()}"
    ]
    for r in report.results:
        took = f"recovered in {r['seconds']:.2f} s" if r["seconds"] is not None else ""
        said = "; ".join(part for part in (took, r["detail"]) if part)
        lines.append(f"  {r['name']:<9} {r['outcome'].upper():<8} {said}")
    return "\n".join(lines)
