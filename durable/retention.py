"""Retention: how much history each tenant keeps (``RetentionPolicy``), applied in batches.

A policy belongs to a tenant and one of its graphs (``graph``), or to every graph of the
tenant without an enabled policy of its own (``graph`` blank). A thread not updated for
``max_age`` is deleted (the thread, its runs, every checkpoint, blob and write) or pruned
to its latest checkpoint per namespace; any other thread, when ``keep_last`` is N, keeps
its last N per namespace. Pruning is the saver's (``DjangoSaver.prune``, its dry run
``prune_plan``), so survivors read as before, DeltaChannel values included.

Candidate threads are read ``batch_size`` at a time, each batch one transaction that
locks its thread rows first (PostgreSQL: ``FOR UPDATE SKIP LOCKED``, so two sweeps share
the work); a thread with an active run (``Run.ACTIVE``) is skipped. Each thread is pruned
or deleted in a savepoint with its ``AuditEvent``; one that fails is rolled back alone and
reported as an error. ``apply`` serves the schedule (``sweep``) and ``manage.py
prune_threads``; ``prune_threads`` and ``delete_threads`` the admin's actions;
``policy_problems`` says what a policy lacks (the admin's policy form).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.template.defaultfilters import pluralize
from django.utils import timezone

from durable import audit
from durable.graphs import UnknownGraph, graph_names
from durable.metrics import process as metrics
from durable.models import AuditEvent, Checkpoint, RetentionPolicy, Run, Tenant, Thread
from durable.persistence.checkpoint import Counts, DjangoSaver
from durable.persistence.store import DjangoStore

logger = logging.getLogger(__name__)

ACTOR = "retention"
BATCH_SIZE = 100

DELETE = "delete"
PRUNE = "prune"
SKIP = "skip"
ERROR = "error"


@dataclass(frozen=True)
class Rule:
    """What happens to one thread: ``delete`` it, or ``prune`` it to its last ``keep``
    checkpoints per namespace (1: LangGraph's ``keep_latest``)."""

    action: str
    keep: int | None = None
    policy: RetentionPolicy | None = None
    why: str = ""

    @property
    def strategy(self) -> str:
        if self.action == DELETE:
            return "delete"
        return "keep_latest" if self.keep == 1 else "keep_last"


@dataclass
class Outcome:
    """What happened (or, in a dry run, would happen) to one thread.

    ``action`` is ``delete``, ``prune``, ``skip`` (an active run; nothing done) or
    ``error`` (rolled back; ``note`` says why). ``removed`` counts the rows removed (or
    that would be), ``kept`` those left; ``before`` and ``after`` are the thread's newest
    root checkpoint before and after (``after`` is empty for a deleted thread)."""

    thread_pk: int
    tenant: str
    thread_name: str
    thread_id: str
    graph: str
    action: str
    keep: int | None = None
    policy: int | None = None
    removed: Counts = field(default_factory=Counts)
    kept: Counts = field(default_factory=Counts)
    before: str = ""
    after: str = ""
    note: str = ""

    @property
    def changes(self) -> bool:
        """Whether the thread loses anything (a deleted thread always does)."""
        return self.action == DELETE or (self.action == PRUNE and bool(self.removed))

    @property
    def label(self) -> str:
        if self.action == PRUNE:
            return "prune to latest" if self.keep == 1 else f"prune to last {self.keep}"
        if self.action == SKIP:
            return f"skipped: {self.note}"
        if self.action == ERROR:
            return f"error: {self.note}"
        return self.action


@dataclass
class Report:
    """The outcome of a sweep: one ``Outcome`` per thread examined, and the batches."""

    dry_run: bool
    outcomes: list[Outcome] = field(default_factory=list)
    batches: int = 0

    def of(self, action: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.action == action]

    @property
    def removed(self) -> Counts:
        total = Counts()
        for outcome in self.outcomes:
            if outcome.action in (PRUNE, DELETE):
                total += outcome.removed
        return total

    @property
    def pruned(self) -> int:
        return sum(1 for o in self.outcomes if o.action == PRUNE and o.changes)

    @property
    def deleted(self) -> int:
        return len(self.of(DELETE))

    @property
    def unchanged(self) -> int:
        return sum(1 for o in self.outcomes if o.action == PRUNE and not o.changes)

    def summary(self) -> str:
        removed = self.removed
        verb = "Would remove" if self.dry_run else "Removed"
        parts = [
            f"{self.pruned} thread{pluralize(self.pruned)} pruned",
            f"{self.deleted} deleted",
            f"{self.unchanged} unchanged",
            f"{len(self.of(SKIP))} skipped (active run)",
        ]
        if errors := len(self.of(ERROR)):
            parts.append(f"{errors} failed")
        return (
            f"{verb} {removed.checkpoints} checkpoint{pluralize(removed.checkpoints)}, "
            f"{removed.blobs} blob{pluralize(removed.blobs)}, "
            f"{removed.writes} write{pluralize(removed.writes)}: {', '.join(parts)}."
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "batches": self.batches,
            "removed": self.removed.as_dict(),
            "pruned": self.pruned,
            "deleted": self.deleted,
            "unchanged": self.unchanged,
            "skipped": len(self.of(SKIP)),
            "errors": len(self.of(ERROR)),
        }


# -- what a policy must say -----------------------------------------------------------------


def policy_problems(graph: str, max_age, keep_last) -> dict[str, str]:
    """What keeps a policy with these fields from applying, by field (``{}``: nothing):
    a ``graph`` that is not registered (blank is every graph), or neither a ``max_age``
    nor a ``keep_last`` (the model's ``retention_has_a_limit``, said in words)."""
    problems = {}
    if graph and graph not in graph_names():
        problems["graph"] = str(UnknownGraph(graph))
    if max_age is None and keep_last is None:
        problems["max_age"] = (
            "A policy needs a maximum age (max_age) or a number of checkpoints to keep "
            "(keep_last): set one of them, or both."
        )
    return problems


# -- which threads, and what happens to each ---------------------------------------------


def rule_for(policy: RetentionPolicy, thread: Thread, now: datetime) -> Rule | None:
    """What ``policy`` does to ``thread`` at ``now``: ``max_age`` first (the thread is
    deleted or pruned to its latest checkpoint), then ``keep_last``."""
    if policy.max_age is not None and thread.updated_at <= now - policy.max_age:
        why = f"not updated for {_age(policy.max_age)} (policy {policy})"
        if policy.strategy == RetentionPolicy.Strategy.DELETE:
            return Rule(DELETE, policy=policy, why=why)
        return Rule(PRUNE, keep=1, policy=policy, why=why)
    if policy.keep_last is not None:
        kept = f"{policy.keep_last} checkpoint{pluralize(policy.keep_last)}"
        why = f"keeps its last {kept} (policy {policy})"
        return Rule(PRUNE, keep=policy.keep_last, policy=policy, why=why)
    return None


def policy_threads(policy: RetentionPolicy, now: datetime) -> QuerySet[Thread]:
    """The threads ``policy`` may change at ``now``: its tenant's threads of its graph
    (a catch-all policy: of the graphs without an enabled policy of their own) that are
    old enough, or hold more checkpoints than the policy keeps. Those already pruned
    are left out where a query can tell (no more checkpoints than kept), so a sweep
    reads few threads twice."""
    threads = Thread.objects.filter(tenant_id=policy.tenant_id)
    if policy.graph:
        threads = threads.filter(graph=policy.graph)
    else:
        own = RetentionPolicy.objects.filter(tenant_id=policy.tenant_id, enabled=True).exclude(
            graph=""
        )
        threads = threads.exclude(graph__in=own.values("graph"))
    wanted = Q(pk__in=[])
    if policy.max_age is not None:
        old = Q(updated_at__lte=now - policy.max_age)
        if policy.strategy == RetentionPolicy.Strategy.DELETE:
            wanted |= old
        else:
            wanted |= old & _unpruned()
    if policy.keep_last is not None:
        wanted |= Q(_more_than(policy.keep_last))
    return threads.filter(wanted)


def _checkpoints_of_thread() -> QuerySet[Checkpoint]:
    return Checkpoint.objects.filter(thread_id=OuterRef("thread_id")).order_by().values("pk")


def _more_than(n: int) -> Exists:
    """The thread has more than ``n`` checkpoints (in all namespaces): one index probe
    that stops at the (n+1)th."""
    return Exists(_checkpoints_of_thread()[n : n + 1])


def _unpruned() -> Q:
    """The thread may have more than its latest checkpoint per namespace: some
    checkpoint has a parent (pruning to the latest leaves one parentless checkpoint per
    namespace, unless a DeltaChannel chain is kept), or the root namespace has two.
    So a thread pruned to its latest, subgraph namespaces and all, is not read again."""
    has_parent = _checkpoints_of_thread().filter(parent_checkpoint_id__isnull=False)[:1]
    two_roots = _checkpoints_of_thread().filter(checkpoint_ns="")[1:2]
    return Q(Exists(has_parent)) | Q(Exists(two_roots))


# -- the entry points ----------------------------------------------------------------------


def apply(
    *,
    tenant: Tenant | None = None,
    policies: Iterable[RetentionPolicy] | None = None,
    dry_run: bool = False,
    actor: Any = ACTOR,
    reason: str = "",
    batch_size: int = BATCH_SIZE,
    now: datetime | None = None,
) -> Report:
    """Apply ``policies`` (default: every enabled policy, of ``tenant`` when given).
    Returns the report; with ``dry_run``, what would be done, and nothing changes.
    Audit events name ``actor`` and give ``reason``, else the policy's rule."""
    _check_batch_size(batch_size)
    now = now or timezone.now()
    if policies is None:
        policies = RetentionPolicy.objects.filter(enabled=True)
        if tenant is not None:
            policies = policies.filter(tenant=tenant)
        policies = policies.select_related("tenant").order_by("tenant__slug", "graph")
    report = Report(dry_run)
    saver = DjangoSaver()
    for policy in policies:
        _sweep(
            policy_threads(policy, now),
            lambda thread, policy=policy: rule_for(policy, thread, now),
            saver=saver,
            report=report,
            dry_run=dry_run,
            actor=actor,
            reason=reason,
            batch_size=batch_size,
        )
    return report


def prune_threads(
    threads: QuerySet[Thread],
    *,
    keep: int = 1,
    dry_run: bool = False,
    actor: Any = ACTOR,
    reason: str = "",
    batch_size: int = BATCH_SIZE,
) -> Report:
    """Prune each of ``threads`` to its last ``keep`` checkpoints per namespace (the
    DeltaChannel chains they need included), whatever the policies say."""
    if keep < 1:
        raise ValueError(f"keep must be at least 1, got {keep}")
    _check_batch_size(batch_size)
    return _every(threads, Rule(PRUNE, keep=keep, why=reason), dry_run, actor, reason, batch_size)


def delete_threads(
    threads: QuerySet[Thread],
    *,
    dry_run: bool = False,
    actor: Any = ACTOR,
    reason: str = "",
    batch_size: int = BATCH_SIZE,
) -> Report:
    """Delete each of ``threads`` with its runs and every checkpoint, blob and write."""
    _check_batch_size(batch_size)
    return _every(threads, Rule(DELETE, why=reason), dry_run, actor, reason, batch_size)


def _every(threads, rule: Rule, dry_run: bool, actor: Any, reason: str, batch_size: int) -> Report:
    """``rule`` applied to each of ``threads``, whatever the policies say."""
    report = Report(dry_run)
    _sweep(
        _lockable(threads),
        lambda thread: rule,
        saver=DjangoSaver(),
        report=report,
        dry_run=dry_run,
        actor=actor,
        reason=reason,
        batch_size=batch_size,
    )
    return report


def sweep(*, batch_size: int = BATCH_SIZE) -> dict[str, Any]:
    """The scheduled job (Celery task ``durable.sweep_retention``): apply every enabled
    policy, then delete the store's expired items (``DjangoStore.sweep_ttl``)."""
    try:
        report = apply(batch_size=batch_size)
        expired = DjangoStore().sweep_ttl()
    except Exception:
        metrics.RETENTION_SWEEPS.labels("failed").inc()
        raise
    metrics.RETENTION_SWEEPS.labels("done").inc()
    logger.info("retention: %s Store: %d expired items deleted.", report.summary(), expired)
    return {"retention": report.as_dict(), "store_expired": expired}


def _lockable(threads: QuerySet[Thread]) -> QuerySet[Thread]:
    """``threads`` (a selection in the admin, say: maybe DISTINCT, ordered, annotated)
    as a plain query PostgreSQL can lock rows of."""
    return Thread.objects.filter(pk__in=threads.order_by().values("pk"))


def _check_batch_size(batch_size: int) -> None:
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")


# -- the sweep -------------------------------------------------------------------------------


def _sweep(
    threads: QuerySet[Thread],
    rule_of: Callable[[Thread], Rule | None],
    *,
    saver: DjangoSaver,
    report: Report,
    dry_run: bool,
    actor: Any,
    reason: str,
    batch_size: int,
) -> None:
    last_pk = 0
    while True:
        # A dry run reads only: no transaction (on SQLite one would take the write lock).
        with transaction.atomic() if not dry_run else nullcontext():
            page = threads.filter(pk__gt=last_pk).select_related("tenant").order_by("pk")
            if not dry_run:
                page = page.select_for_update(skip_locked=True, of=("self",))
            batch = list(page[:batch_size])
            if not batch:
                return
            report.batches += 1
            last_pk = batch[-1].pk
            # Read after the rows are locked: no run can be requested on them now.
            busy = set(
                Run.objects.filter(thread__in=batch, status__in=Run.ACTIVE).values_list(
                    "thread", flat=True
                )
            )
            for thread in batch:
                rule = rule_of(thread)
                if rule is None:
                    continue
                if thread.pk in busy:
                    report.outcomes.append(_outcome(thread, rule, SKIP, note="active run"))
                elif dry_run:
                    report.outcomes.append(_plan(saver, thread, rule))
                else:
                    report.outcomes.append(_act(saver, thread, rule, actor, reason))


def _outcome(thread: Thread, rule: Rule, action: str, **fields) -> Outcome:
    return Outcome(
        thread_pk=thread.pk,
        tenant=thread.tenant.slug,
        thread_name=thread.name,
        thread_id=thread.thread_id,
        graph=thread.graph,
        action=action,
        keep=rule.keep,
        policy=rule.policy.pk if rule.policy else None,
        **fields,
    )


def _plan(saver: DjangoSaver, thread: Thread, rule: Rule) -> Outcome:
    """What ``rule`` would remove from ``thread``, read without changing anything."""
    head = audit.head_checkpoint(thread)
    if rule.action == DELETE:
        plan = saver.prune_plan([thread.thread_id], strategy="delete")[thread.thread_id]
        return _outcome(thread, rule, DELETE, removed=plan.removed, before=head)
    plan = saver.prune_plan([thread.thread_id], keep_last=rule.keep)[thread.thread_id]
    return _outcome(
        thread, rule, PRUNE, removed=plan.removed, kept=plan.kept, before=head, after=head
    )


def _act(saver: DjangoSaver, thread: Thread, rule: Rule, actor: Any, reason: str) -> Outcome:
    try:
        with transaction.atomic():
            before = saver.count_rows(thread.thread_id)
            head = audit.head_checkpoint(thread)
            if rule.action == DELETE:
                outcome = _outcome(thread, rule, DELETE, removed=before, before=head)
                _record(outcome, thread, rule, actor, reason)
                saver.delete_thread(thread.thread_id)
                thread.delete()
                return outcome
            saver.prune([thread.thread_id], keep_last=rule.keep)
            after = saver.count_rows(thread.thread_id)
            outcome = _outcome(
                thread,
                rule,
                PRUNE,
                removed=before - after,
                kept=after,
                before=head,
                after=audit.head_checkpoint(thread),
            )
            if outcome.changes:
                _record(outcome, thread, rule, actor, reason)
            return outcome
    except Exception as exc:
        logger.exception("retention: %s of thread %s failed", rule.action, thread.thread_id)
        return _outcome(thread, rule, ERROR, note=f"{type(exc).__name__}: {exc}")


def _record(outcome: Outcome, thread: Thread, rule: Rule, actor: Any, reason: str) -> None:
    detail = {
        "strategy": rule.strategy,
        "removed": outcome.removed.as_dict(),
        "kept": outcome.kept.as_dict(),
    }
    if rule.action == PRUNE:
        detail["keep_last"] = rule.keep
    if rule.policy is not None:
        detail["policy"] = rule.policy.pk
        detail["policy_graph"] = rule.policy.graph
    audit.record(
        AuditEvent.Action.DELETE if rule.action == DELETE else AuditEvent.Action.PRUNE,
        actor=actor,
        thread=thread,
        before=outcome.before,
        after=outcome.after,
        reason=reason or rule.why,
        detail=detail,
    )


def _age(delta) -> str:
    days = delta.days
    if delta.seconds == 0 and days:
        return f"{days} day{'s' * (days != 1)}"
    return str(delta)
