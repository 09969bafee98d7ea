"""``/threads/{thread_id}/divergence`` and ``/threads/{thread_id}/runs/{run_id}/divergence``:
where a replayed or forked branch first did something else than the branch it left
(``durable.reports.divergence``). Routes of our own, beside the Agent Server's."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Query, Router
from pydantic import Field

from durable import reports
from durable.api import access
from durable.api.answers import Answer
from durable.api.schemas import Strict, ThreadId
from durable.reports.divergence import Divergence, Step

divergence = Router(tags=["divergence"])


class DivergenceQuery(Strict):
    checkpoint_id: str = Field(
        description="A checkpoint of the new branch: its branch is compared with the one it left."
    )


class DivergenceStep(Answer):
    """What one branch did at one step: the checkpoint its tasks ran from (``ran_on``)
    and the one they made (``checkpoint_id``, ``null`` for a step that stopped there),
    LangGraph's ``step`` and ``source`` of that checkpoint, the nodes that ran, what each
    wrote (``{node: {channel: value}}``), the interrupts fired (``[{"node", "value"}]``)
    and errors raised (``[{"node", "error"}]``), what interrupted nodes were resumed
    with (``answers``: ``[{"node", "value"}]``); ``update``: the step is a state update
    (``nodes`` names the node it counts as); ``waiting``: it stopped at an interrupt not
    answered yet."""

    ran_on: str
    checkpoint_id: str | None
    step: int | None
    source: str
    nodes: list[str]
    writes: dict[str, dict[str, Any]]
    interrupts: list[dict[str, Any]]
    errors: list[dict[str, Any]]
    answers: list[dict[str, Any]]
    update: bool
    waiting: bool


class MatchedStep(Answer):
    """A step both branches did alike: the nodes that ran, and the checkpoint each branch
    made (``old``, ``new``; ``null`` for a step that stopped there)."""

    nodes: list[str]
    old: str | None
    new: str | None


class DivergenceChange(Answer):
    """One path that differs at the divergent step: ``added``, ``removed`` or
    ``changed``, from the old branch's value to the new one's."""

    kind: Literal["added", "removed", "changed"]
    path: str
    old: Any
    new: Any


class DivergenceReport(Answer):
    """A new branch compared, step by step from its fork point, with the branch it left.

    ``status``: ``diverged`` (``step`` is the first step, counted from the fork point, where
    the branches differ: ``old`` and ``new`` are what each did there, ``null`` for a branch
    that had ended; ``differs`` names what differs: ``nodes``, ``writes``, ``interrupts``,
    ``errors``, or ``steps`` when one branch has ended; ``changes`` are the paths that
    differ), ``no_divergence``, or ``no_fork`` (the branch left no other branch: a run that
    is no replay or fork, or has written no checkpoint yet). ``fork_point``: the checkpoint
    both branches start from; ``new_start``: the new branch's first checkpoint;
    ``old_head``/``new_head``: each branch's last. ``matched``: how many steps matched
    (``matched_steps``: what each did). ``waiting``: the new branch waits at an interrupt
    that the old one answered. ``truncated``: the comparison stopped at its bounds (so many
    steps compared, or no fork point among so many of the newest checkpoints)."""

    status: Literal["diverged", "no_divergence", "no_fork"]
    checkpoint_id: str | None
    fork_point: str | None
    new_start: str | None
    old_head: str | None
    new_head: str | None
    matched: int
    matched_steps: list[MatchedStep]
    step: int | None
    old: DivergenceStep | None
    new: DivergenceStep | None
    differs: list[str]
    changes: list[DivergenceChange]
    waiting: bool
    truncated: bool


@divergence.get(
    "/{thread_id}/divergence",
    summary="Compare a replayed or forked branch with the branch it left",
    response=DivergenceReport,
)
def thread_divergence(request, thread_id: ThreadId, query: Query[DivergenceQuery]):
    """The branch through ``checkpoint_id`` compared with the branch it left, from the
    fork point (the nearest checkpoint with another child), step by step: the first step
    where they differ, or ``no_divergence``. 422 naming ``checkpoint_id`` for a checkpoint
    the thread does not have."""
    thread = access.thread(request, thread_id)
    return report_json(reports.divergence(thread, query.checkpoint_id))


@divergence.get(
    "/{thread_id}/runs/{run_id}/divergence",
    summary="Compare the branch a replay or fork run made with the branch it left",
    response=DivergenceReport,
)
def run_divergence(request, thread_id: ThreadId, run_id: str):
    """As ``GET /threads/{thread_id}/divergence``, from the newest checkpoint of the run
    (a replay, a fork, or an interrupt answered again); ``no_fork`` for another run."""
    return report_json(reports.run_divergence(access.run(request, thread_id, run_id)))


def report_json(report: Divergence) -> dict:
    return {
        "status": report.status,
        "checkpoint_id": report.checkpoint_id,
        "fork_point": report.fork_point,
        "new_start": report.new_start,
        "old_head": report.old_head,
        "new_head": report.new_head,
        "matched": report.matched,
        "matched_steps": report.matched_steps,
        "step": report.step,
        "old": _step_json(report.old),
        "new": _step_json(report.new),
        "differs": report.differs,
        "changes": [
            {"kind": c.kind, "path": c.path, "old": c.old, "new": c.new} for c in report.changes
        ],
        "waiting": report.waiting,
        "truncated": report.truncated,
    }


def _step_json(step: Step | None) -> dict | None:
    if step is None:
        return None
    return {
        "ran_on": step.ran_on,
        "checkpoint_id": step.checkpoint_id,
        "step": step.step,
        "source": step.source,
        "nodes": step.nodes,
        "writes": step.writes,
        "interrupts": step.interrupts,
        "errors": step.errors,
        "answers": step.answers,
        "update": step.update,
        "waiting": step.waiting,
    }
