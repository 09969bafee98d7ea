"""How a thread stands, as an operator would say it: one ``Diagnosis`` with the next action.

The classes are ``RULES``, an ordered list: the first rule that holds for a thread gives
its diagnosis. Each rule is a ``kind``, a ``label``, a ``where`` (a ``Q`` on ``Thread``
that holds for the threads the rule may apply to, so that the threads list filters in
SQL) and a ``describe`` (the diagnosis of one thread the ``where`` matched, read from
its runs and events; ``None`` when a closer look finds the rule does not apply after
all, as for ``ran_twice``, whose ``where`` only finds the candidates). A rule is added
by inserting a ``Rule`` where its class ranks.

``diagnose(thread)`` evaluates every ``where`` of the thread in one query and describes
the first that holds; ``filter_threads(queryset, kind)`` keeps the threads whose first
holding rule is ``kind``: that rule's ``where`` and no earlier one's, then, for a rule
whose ``where`` finds candidates, at most ``REFINE_LIMIT`` of them described one by one.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db.models import BooleanField, Count, Exists, ExpressionWrapper, OuterRef, Q, QuerySet
from django.db.models.fields.json import KT
from django.utils import timezone

from durable import conf
from durable.engine.fit import thread_drift
from durable.engine.state import thread_state
from durable.engine.task_events import executions, running_nodes, task_starts
from durable.graphs import graph_names
from durable.history import newest_checkpoint_id
from durable.models import Checkpoint, Run, Thread
from durable.reports.drift import version_differs

# How many candidate threads ``filter_threads`` describes one by one, at most, for a rule
# whose ``where`` only finds candidates (their latest run's events are read).
REFINE_LIMIT = 200
FAILED = (Run.Status.ERROR, Run.Status.TIMEOUT)
# Checkpoint metadata ``source`` of a checkpoint written by ``update_state`` (and of a
# copy), not by a run: such a checkpoint's next tasks wait on no breakpoint.
UPDATES = ("update", "fork")


@dataclass(frozen=True)
class Action:
    """The next action: ``label`` for its button or link, ``does`` in words, ``name``
    what it is (``run``: open a run's page, ``answer``, ``replay``, ``history``, ``start``) and
    ``args`` what it acts on (``run``: a run's pk, ``checkpoint_id``); the console maps
    ``name`` to its page."""

    label: str
    does: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Diagnosis:
    """``kind`` (a ``RULES`` kind), ``text`` (one line), ``since`` (when the thread came
    to stand so, or ``None``), ``details`` (the facts the text is made of: ``run``,
    ``node``, ``worker``, ``error_type``...), and the next ``action``."""

    kind: str
    label: str
    text: str
    since: dt.datetime | None
    details: dict[str, Any]
    action: Action | None

    @property
    def rest(self) -> str:
        """``text`` after its leading ``"<label>: "``, for a page that shows the label
        on its own."""
        return self.text.removeprefix(f"{self.label}: ")


@dataclass(frozen=True)
class Rule:
    """One class of ``RULES``: ``where(now)`` in SQL, ``describe(thread, now)`` per thread."""

    kind: str
    label: str
    where: Callable[[dt.datetime], Q]
    describe: Callable[[Thread, dt.datetime], Diagnosis | None]
    refines: bool = False  # ``where`` finds candidates; ``describe`` decides


# -- what the rules read ----------------------------------------------------------------


def _runs(**filters) -> QuerySet[Run]:
    return Run.objects.filter(thread=OuterRef("pk"), **filters)


def _latest(*conditions, **filters) -> Exists:
    """The thread's latest run (highest pk) matches ``conditions`` (expressions on the
    run) and ``filters``."""
    newer = Run.objects.filter(thread=OuterRef("thread"), pk__gt=OuterRef("pk"))
    return Exists(_runs(**filters).filter(*conditions).exclude(Exists(newer)))


def _latest_run(thread: Thread) -> Run | None:
    return thread.runs.order_by("-pk").first()


def _active_run(thread: Thread, status: str) -> Run | None:
    return thread.runs.filter(status=status).order_by("pk").first()


def _at(moment: dt.datetime | None) -> str:
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M:%S") if moment else "?"


def _follow(run: Run) -> Action:
    return Action(
        f"Follow run {run.pk}", "open the run's page and live events", "run", {"run": run.pk}
    )


# -- the rules, in order ------------------------------------------------------------------


def _stalled_where(now: dt.datetime) -> Q:
    return Q(Exists(_runs(status=Run.Status.RUNNING, lease_expires_at__lt=now)))


def _stalled(thread: Thread, now: dt.datetime) -> Diagnosis | None:
    run = _active_run(thread, Run.Status.RUNNING)
    if run is None or run.lease_expires_at is None or run.lease_expires_at >= now:
        return None
    interval = timedelta(seconds=conf.DURABLE_REAPER_INTERVAL_SECONDS)
    acts_by = run.lease_expires_at + interval
    overdue = now > acts_by
    text = (
        f"Stalled: run {run.pk}'s lease (worker {run.worker or '?'}, attempt {run.attempt}) "
        f"expired at {_at(run.lease_expires_at)} and no worker has taken it; "
    )
    if overdue:
        text += (
            f"a worker's reaper should have re-enqueued it by {_at(acts_by)}: "
            "is any worker (celery -A dashboard worker) running?"
        )
    else:
        text += f"the reaper re-enqueues it by {_at(acts_by)}."
    details = {
        "run": run.pk,
        "worker": run.worker,
        "attempt": run.attempt,
        "lease_expired_at": run.lease_expires_at,
        "reaper_acts_by": acts_by,
        "overdue": overdue,
    }
    return Diagnosis("stalled", "Stalled", text, run.lease_expires_at, details, _follow(run))


def _running_where(now: dt.datetime) -> Q:
    return Q(Exists(_runs(status=Run.Status.RUNNING)))


def _running(thread: Thread, now: dt.datetime) -> Diagnosis | None:
    run = _active_run(thread, Run.Status.RUNNING)
    if run is None:
        return None
    nodes = running_nodes(run)
    where = f" in node{'s' if len(nodes) > 1 else ''} {', '.join(nodes)}" if nodes else ""
    text = (
        f"Running: run {run.pk} ({run.kind}) since {_at(run.started_at)}{where}, "
        f"on worker {run.worker or '?'}"
    )
    if run.attempt > 1:
        text += f" (attempt {run.attempt})"
    if run.stop_requested:
        text += f"; asked to stop ({run.stop_requested})"
    details = {"run": run.pk, "nodes": nodes, "worker": run.worker, "attempt": run.attempt}
    return Diagnosis("running", "Running", text + ".", run.started_at, details, _follow(run))


def _queued_where(now: dt.datetime) -> Q:
    return Q(Exists(_runs(status=Run.Status.PENDING)))


def _queued(thread: Thread, now: dt.datetime) -> Diagnosis | None:
    run = _active_run(thread, Run.Status.PENDING)
    if run is None:
        return None
    if run.not_before and run.not_before > now:
        text = f"Queued: run {run.pk} ({run.kind}) is scheduled for {_at(run.not_before)}."
    else:
        text = (
            f"Queued: run {run.pk} ({run.kind}) has waited for a worker since {_at(run.created_at)}"
        )
        lease = timedelta(seconds=conf.DURABLE_RUN_LEASE_SECONDS)
        interval = timedelta(seconds=conf.DURABLE_REAPER_INTERVAL_SECONDS)
        if now - (run.dispatched_at or run.created_at) > lease + interval:
            text += "; no worker has taken it: is any worker (celery -A dashboard worker) running?"
        else:
            text += "."
    details = {"run": run.pk, "not_before": run.not_before}
    return Diagnosis("queued", "Queued", text, run.created_at, details, _follow(run))


def _failed_where(now: dt.datetime) -> Q:
    return Q(_latest(status__in=FAILED))


def _failed(thread: Thread, now: dt.datetime) -> Diagnosis | None:
    run = _latest_run(thread)
    if run is None or run.status not in FAILED:
        return None
    if run.status == Run.Status.TIMEOUT:
        what = run.stop_detail or "timed out"
    else:
        what = f"{run.error_type or 'error'}: {run.error_message}".strip()
    node = f" in node {run.error_node}" if run.error_node else ""
    text = f"Failed: run {run.pk}{node} ({what}), attempt {run.attempt}."
    checkpoint_id = newest_checkpoint_id(thread.thread_id)
    action = None
    if checkpoint_id:
        action = Action(
            "Retry from the failed step",
            "replay the thread from the checkpoint the failed step started from",
            "replay",
            {"checkpoint_id": checkpoint_id},
        )
    details = {
        "run": run.pk,
        "node": run.error_node,
        "error_type": run.error_type or run.status,
        "error_message": run.error_message or run.stop_detail,
        "attempt": run.attempt,
        "checkpoint_id": checkpoint_id,
    }
    return Diagnosis("failed", "Failed", text, run.ended_at, details, action)


def _incompatible_where(now: dt.datetime) -> Q:
    return version_differs(graph_names())


def _incompatible(thread: Thread, now: dt.datetime) -> Diagnosis | None:
    drift = thread_drift(thread)
    if drift is None:
        return None
    problems = "; ".join(f.message for f in drift.findings)
    text = (
        f"Incompatible: the newest checkpoint no longer fits {drift.deployed.name} "
        f"(since {drift.since.name}): {problems}. Resume, replay and answering again "
        "are refused until the thread is migrated."
    )
    action = Action(
        "Migrate",
        "fork the thread with its state mapped to the deployed schema",
        "migrate",
        {"checkpoint_id": drift.checkpoint_id},
    )
    details = {"findings": [f.message for f in drift.findings], "since": drift.since.name}
    return Diagnosis("incompatible", "Incompatible", text, thread.updated_at, details, action)


def _ran_twice_where(now: dt.datetime) -> Q:
    repeated = (
        task_starts(OuterRef("pk"))
        .values(task=KT("data__id"))
        .annotate(n=Count("pk"))
        .filter(n__gte=2)
    )
    return Q(_latest(Exists(repeated), attempt__gt=1))


def _ran_twice(thread: Thread, now: dt.datetime) -> Diagnosis | None:
    run = _latest_run(thread)
    if run is None or run.attempt < 2:
        return None
    again = sorted({name for (_, name), n in executions(run).items() if n > 1})
    if not again:
        return None
    text = (
        f"Ran more than once: after a recovery, {', '.join(again)} ran again in the same "
        f"super-step of run {run.pk} ({run.status}); side effects may have happened twice."
    )
    action = Action(
        f"Review run {run.pk}",
        "open the run's events to check its side effects",
        "run",
        {"run": run.pk},
    )
    details = {"run": run.pk, "nodes": again, "attempt": run.attempt}
    return Diagnosis("ran_twice", "Ran more than once", text, run.ended_at, details, action)


def _waiting_where(now: dt.datetime) -> Q:
    return Q(status=Thread.Status.INTERRUPTED)


def _waiting(thread: Thread, now: dt.datetime) -> Diagnosis | None:
    if thread.status != Thread.Status.INTERRUPTED:
        return None
    state = thread_state(thread)
    nodes = sorted({t.name for t in state.tasks if t.interrupts})
    count = len(state.interrupts)
    run = _latest_run(thread)
    since = (run.ended_at if run and run.ended_at else None) or thread.updated_at
    details = {"interrupts": count, "nodes": nodes, "next": list(state.next)}
    if count:
        on = f"{count} interrupt{'s' if count != 1 else ''}"
        on += f" in {', '.join(nodes)}" if nodes else ""
        text = f"Waiting for a person: since {_at(since)}, {on}."
        action = Action("Answer", "answer the pending interrupts in the inbox", "answer")
        return Diagnosis("waiting", "Waiting for a person", text, since, details, action)
    # Nothing to answer: the thread is ``interrupted`` as the Agent Server counts it (its
    # latest checkpoint has next tasks), and a run with no input goes on from there.
    next_ = ", ".join(state.next)
    if (state.metadata or {}).get("source") in UPDATES:
        # Written by update_state, not by a run: the wait starts there, not at the
        # interrupt of the run before.
        if state.created_at:
            since = dt.datetime.fromisoformat(state.created_at)
        on = (
            f"to start a run from the checkpoint an update wrote; {next_} would run next,"
            " and no interrupt is pending"
        )
    else:
        on = f"a breakpoint before {next_}" if next_ else "a breakpoint"
    text = f"Waiting for a person: since {_at(since)}, {on}."
    checkpoint_id = state.config["configurable"]["checkpoint_id"]
    action = Action(
        "Go on from here",
        "run the thread on from its latest checkpoint",
        "replay",
        {"checkpoint_id": checkpoint_id},
    )
    return Diagnosis("waiting", "Waiting for a person", text, since, details, action)


def _finished_where(now: dt.datetime) -> Q:
    checkpoints = Checkpoint.objects.filter(thread_id=OuterRef("thread_id"), checkpoint_ns="")
    return Q(Exists(_runs())) | Q(Exists(checkpoints))


def _finished(thread: Thread, now: dt.datetime) -> Diagnosis | None:
    run = _latest_run(thread)
    if run is not None:
        text = f"Finished: run {run.pk} ({run.kind}) ended {run.status} at {_at(run.ended_at)}."
        since = run.ended_at
    else:
        # Checkpoints with no run: a copied thread, or state written through the API.
        text = "Finished: the thread has checkpoints and no run."
        since = thread.updated_at
    action = Action("Open the history", "see the thread's checkpoints", "history")
    details = {"run": run.pk if run else None, "status": run.status if run else ""}
    return Diagnosis("finished", "Finished", text, since, details, action)


def _never_started_where(now: dt.datetime) -> Q:
    return Q(pk__isnull=False)


def _never_started(thread: Thread, now: dt.datetime) -> Diagnosis:
    text = "Never started: no run and no checkpoint yet."
    action = Action("Start a run", "start a run on this thread (HTTP API)", "start")
    return Diagnosis("never_started", "Never started", text, thread.created_at, {}, action)


# The order is the precedence: what is happening now (a run stalled, running, queued)
# before how the thread was left; a thread the deployed graph cannot go on with before
# the rest, since every way on is refused until it is migrated. Its ``where`` finds the
# threads whose recorded version is not the deployed one; ``thread_drift`` decides.
RULES: list[Rule] = [
    Rule("stalled", "Stalled", _stalled_where, _stalled),
    Rule("running", "Running", _running_where, _running),
    Rule("queued", "Queued", _queued_where, _queued),
    Rule("incompatible", "Incompatible", _incompatible_where, _incompatible, refines=True),
    Rule("failed", "Failed", _failed_where, _failed),
    Rule("ran_twice", "Ran more than once", _ran_twice_where, _ran_twice, refines=True),
    Rule("waiting", "Waiting for a person", _waiting_where, _waiting),
    Rule("finished", "Finished", _finished_where, _finished),
    Rule("never_started", "Never started", _never_started_where, _never_started),
]


def diagnoses() -> list[tuple[str, str]]:
    """``[(kind, label)]`` of ``RULES``, in order (the threads list's filter choices)."""
    return [(rule.kind, rule.label) for rule in RULES]


DIAGNOSES = diagnoses()


def diagnose(thread: Thread, now: dt.datetime | None = None) -> Diagnosis:
    """The thread's diagnosis: the first rule of ``RULES`` whose ``where`` holds for it
    (all read in one query) and whose ``describe`` confirms it."""
    now = now or timezone.now()
    holds = {
        rule.kind: ExpressionWrapper(rule.where(now), output_field=BooleanField()) for rule in RULES
    }
    row = Thread.objects.filter(pk=thread.pk).values(**holds).first() or {}
    for rule in RULES:
        if row.get(rule.kind):
            found = rule.describe(thread, now)
            if found is not None:
                return found
    return _never_started(thread, now)


def filter_threads(queryset: QuerySet[Thread], kind: str, now=None) -> QuerySet[Thread]:
    """The threads of ``queryset`` whose diagnosis is ``kind``: that rule's ``where``
    and no earlier rule's, in SQL; for a rule that ``refines``, at most ``REFINE_LIMIT``
    of those, confirmed one by one, and an earlier refining rule's candidates are
    confirmed too. Raises ``KeyError`` for a kind not in ``RULES``."""
    now = now or timezone.now()
    kinds = [rule.kind for rule in RULES]
    if kind not in kinds:
        raise KeyError(kind)
    index = kinds.index(kind)
    qs = queryset
    for earlier in RULES[:index]:
        if earlier.refines:
            # Candidates the rule turned down go on to the later rules.
            taken = [t.pk for t in _confirmed(queryset.filter(earlier.where(now)), earlier, now)]
            qs = qs.exclude(pk__in=taken)
        else:
            qs = qs.exclude(earlier.where(now))
    rule = RULES[index]
    qs = qs.filter(rule.where(now))
    if rule.refines:
        qs = queryset.filter(pk__in=[t.pk for t in _confirmed(qs, rule, now)])
    return qs


def _confirmed(candidates: QuerySet[Thread], rule: Rule, now) -> list[Thread]:
    rows = candidates.order_by("-updated_at", "-pk")[:REFINE_LIMIT]
    return [t for t in rows if rule.describe(t, now) is not None]
