"""Where a replayed (or forked) branch of a thread first took another path than the
branch it left: step by step from the fork point, which nodes ran, what each wrote,
which interrupts fired. Nothing here writes.

Replay re-executes everything after its checkpoint, so a node that calls an LLM, draws a
random number or asks an outside service may do something else the second time.

- **Branches.** Checkpoints form a tree (``parent_checkpoint_id``). The *new* branch is
  the line through the checkpoint asked about: up to the nearest ancestor that has
  another child (the *fork point*), and down along the newest child to its end. The *old*
  branch is the line the thread had from the fork point before the new one began: at each
  checkpoint, the newest child older than the new branch's first checkpoint (ids are
  uuid6 and sort by time), else the newest child of all.
- **Copies.** A replay starts its branch with a copy of the checkpoint it replays
  (``source: "fork"``, the same ``channel_versions``), and the tasks then run on the copy;
  answering an interrupt again copies the interrupted checkpoint beside itself
  (``update_state(..., as_node="__copy__")``: a sibling). A copy stands for the
  checkpoint it copies, so both branches start from the same state.
- **Steps.** Step *k* is the *k*-th super-step after that shared state: the tasks that
  ran on the branch's checkpoint *k - 1* (their writes are saved against the checkpoint
  they ran from, with the node's name in ``task_path``) and the checkpoint they made. An
  update (a fork's ``update_state``) is a step of its own: the node it counts as, and the
  channels it changed. A branch's last checkpoint makes one more, unfinished step when
  its tasks stopped there at an interrupt or an error. A branch ends before a new input:
  a later run on it, which the replay is not to be compared with.
- **Divergence.** Two steps differ when other nodes ran, a node wrote other values
  (LangGraph's own channels, ``branch:to:...`` and ``__...__``, left out: the nodes of
  the next step show the path taken), other interrupt values fired (interrupt ids differ
  on every branch; an interrupt answered again is given its answer before it fires, so
  its node's interrupts are not compared) or other errors were raised. A new branch that
  waits at an interrupt where the old one was answered has not diverged yet.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from durable.diffs import Change, changes
from durable.engine.checks import checkpoint_config
from durable.engine.execution import _own_latest_checkpoint
from durable.engine.state import graph_of, state_at
from durable.history import ERROR, INTERRUPT, RESUME, root_checkpoints, writer_names
from durable.models import CheckpointWrite, Run, Thread
from durable.values import jsonable

# How many checkpoints, newest first, are read to find the fork point and both branches;
# a fork point older than that is not looked for (a thread of 10,000 checkpoints stays
# one bounded read).
MAX_CHECKPOINTS = 5000
# How many steps are compared at most.
MAX_STEPS = 500
ROWS_PER_READ = 500
WRITES_PER_READ = 50

DIVERGED, NO_DIVERGENCE, NO_FORK = "diverged", "no_divergence", "no_fork"


@dataclass
class Step:
    """What one branch did at one step.

    ``ran_on``: the checkpoint its tasks ran from; ``checkpoint_id``: the checkpoint they
    made (``None`` for an unfinished step); ``step``: that checkpoint's LangGraph
    ``metadata["step"]``. ``nodes``: the nodes that ran, in task order (an update's: the
    node it counts as). ``writes``: ``{node: {channel: value}}`` (JSON). ``interrupts``:
    ``[{"node", "value"}]`` fired; ``errors``: ``[{"node", "error"}]``; ``answers``:
    ``[{"node", "value"}]``, what interrupted nodes were resumed with. ``update``: the
    step is an ``update_state``; ``waiting``: it stopped at an interrupt not answered."""

    ran_on: str
    checkpoint_id: str | None
    step: int | None
    source: str
    nodes: list[str] = field(default_factory=list)
    writes: dict[str, dict[str, Any]] = field(default_factory=dict)
    interrupts: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    answers: list[dict] = field(default_factory=list)
    update: bool = False
    waiting: bool = False

    @property
    def answered_first(self) -> set[str]:
        """Nodes given their answer before their interrupt fired (an interrupt answered
        again): on this branch the interrupt never fired."""
        fired = {i["node"] for i in self.interrupts}
        return {a["node"] for a in self.answers} - fired

    def compared(self, skip: frozenset[str] = frozenset()) -> dict:
        """What two branches' steps must share to match (JSON), the interrupts of the
        nodes in ``skip`` left out."""
        return {
            "nodes": sorted(self.nodes),
            "writes": self.writes,
            "interrupts": sorted((i for i in self.interrupts if i["node"] not in skip), key=_order),
            "errors": sorted(self.errors, key=_order),
        }


@dataclass
class Divergence:
    """How a new branch compares with the old one.

    ``status``: ``diverged``, ``no_divergence`` or ``no_fork`` (the branch left no other:
    nothing to compare). ``checkpoint_id``: the new branch's checkpoint asked about
    (``None`` for a run that wrote none). ``fork_point``: the checkpoint both branches start
    from (for a copy, the one copied), ``new_start``: the new branch's first checkpoint;
    ``old_head`` / ``new_head``: each branch's last. ``matched``: how many steps matched
    (``matched_steps``: each one's ``{"nodes", "old", "new"}``, the nodes that ran and the
    checkpoint each branch made) before ``step`` (1-based, the first that differs), where
    ``old`` and ``new`` are each branch's (``None`` for a branch that had ended),
    ``differs`` names what differs (``nodes``, ``writes``, ``interrupts``, ``errors``,
    ``steps`` when one branch has ended) and ``changes`` are the paths that differ.
    ``waiting``: without divergence, the new branch waits at an interrupt at step ``matched
    + 1``. ``truncated``: the comparison hit its bounds: ``MAX_STEPS`` steps compared, or no
    fork point among the newest ``MAX_CHECKPOINTS`` checkpoints."""

    status: str
    checkpoint_id: str | None
    fork_point: str | None = None
    new_start: str | None = None
    old_head: str | None = None
    new_head: str | None = None
    matched: int = 0
    matched_steps: list[dict] = field(default_factory=list)
    step: int | None = None
    old: Step | None = None
    new: Step | None = None
    differs: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    waiting: bool = False
    truncated: bool = False

    @property
    def diverged(self) -> bool:
        return self.status == DIVERGED


def divergence(thread: Thread, checkpoint_id: str) -> Divergence:
    """Compare the branch through ``checkpoint_id`` (one of the thread's checkpoints in
    its root namespace) with the branch it left (module docstring). Raises
    ``InvalidRequest("checkpoint_id")`` for a checkpoint the thread does not have."""
    checkpoint_config(thread, checkpoint_id)
    tree = _Tree(thread.thread_id)
    fork_point, path = tree.fork_point(checkpoint_id)
    if fork_point is None:
        return Divergence(NO_FORK, checkpoint_id, truncated=tree.exhausted)
    new_line = tree.down([*path, *tree.newest_line(checkpoint_id)[1:]])
    start = new_line[0]
    old_base = fork_point
    if tree.is_copy(start, fork_point):
        pass  # the copy stands for the fork point: both branches start there
    elif (copied := tree.copied_sibling(start, fork_point)) is not None:
        old_base = copied
    else:
        new_line = [fork_point, *new_line]
    old_line = tree.down(tree.old_line(old_base, cutoff=start, avoid=set(new_line)))
    old_line, new_line = tree.one_run(old_line), tree.one_run(new_line)
    report = Divergence(
        NO_DIVERGENCE,
        checkpoint_id,
        fork_point=old_base,
        new_start=start,
        old_head=old_line[-1],
        new_head=new_line[-1],
    )
    _compare(thread, tree, old_line, new_line, report)
    return report


def run_divergence(run: Run) -> Divergence:
    """``divergence`` for the branch a ``replay`` or ``fork`` run (or an answer given
    again: a ``resume`` with ``forked_from``) made, from its newest checkpoint (a fork
    that has not run yet: its update). Another kind of run, or one that has written no
    checkpoint yet, made no branch: ``no_fork``."""
    head = _own_latest_checkpoint(run)
    # A fork's own first checkpoint is its update; a fork with input (``forked_from`` its
    # checkpoint_id) writes its first when it runs.
    if head is None and run.kind != Run.Kind.REPLAY and run.checkpoint_id != run.forked_from:
        head = run.checkpoint_id or None
    branches = run.kind in (Run.Kind.REPLAY, Run.Kind.FORK) or bool(run.forked_from)
    if head is None or not branches:
        return Divergence(NO_FORK, head)
    return divergence(run.thread, head)


# -- the tree -------------------------------------------------------------------------


@dataclass
class _Row:
    checkpoint_id: str
    parent_id: str | None
    metadata: dict
    versions: dict
    children: list[str] = field(default_factory=list)

    @property
    def source(self) -> str:
        return str(self.metadata.get("source") or "?")


class _Tree:
    """The thread's newest root checkpoints, read backwards in pages as far as needed.
    Once a checkpoint is read, every newer one is too, so its children are all known."""

    def __init__(self, thread_id: str):
        self.rows: dict[str, _Row] = {}
        self._query = root_checkpoints(thread_id)
        self._oldest: str | None = None
        self._done = False
        self._children: dict[str, list[str]] = defaultdict(list)

    @property
    def exhausted(self) -> bool:
        """Whether ``MAX_CHECKPOINTS`` rows were read and older ones left unread."""
        return len(self.rows) >= MAX_CHECKPOINTS

    def get(self, checkpoint_id: str) -> _Row | None:
        while checkpoint_id not in self.rows and not self._done:
            self._read_more()
        return self.rows.get(checkpoint_id)

    def _read_more(self) -> None:
        query = self._query
        if self._oldest is not None:
            query = query.filter(checkpoint_id__lt=self._oldest)
        size = min(ROWS_PER_READ, MAX_CHECKPOINTS - len(self.rows))
        columns = ("checkpoint_id", "parent_checkpoint_id", "metadata", "channel_versions")
        page = list(query.values_list(*columns)[:size])
        for checkpoint_id, parent_id, metadata, versions in page:
            self.rows[checkpoint_id] = _Row(
                checkpoint_id,
                parent_id or None,
                metadata if isinstance(metadata, dict) else {},
                versions if isinstance(versions, dict) else {},
                # Every child is newer than its parent, so already read.
                children=sorted(self._children.pop(checkpoint_id, [])),
            )
            if parent_id:
                self._children[parent_id].append(checkpoint_id)
        self._done = len(page) < size or len(self.rows) >= MAX_CHECKPOINTS
        if page:
            self._oldest = page[-1][0]

    def fork_point(self, checkpoint_id: str) -> tuple[str | None, list[str]]:
        """The nearest ancestor of ``checkpoint_id`` with another child, and the line
        from its child to ``checkpoint_id``; ``(None, ...)`` when there is none."""
        path = [checkpoint_id]
        row = self.get(checkpoint_id)
        while row is not None and row.parent_id:
            parent = self.get(row.parent_id)
            if parent is None:
                break
            if len(parent.children) > 1:
                return parent.checkpoint_id, path[::-1]
            path.append(parent.checkpoint_id)
            row = parent
        return None, path[::-1]

    def newest_line(self, checkpoint_id: str) -> list[str]:
        """``checkpoint_id`` and its descendants along the newest child."""
        line = [checkpoint_id]
        while (row := self.rows.get(line[-1])) and row.children and len(line) < MAX_CHECKPOINTS:
            line.append(row.children[-1])
        return line

    def old_line(self, base: str, *, cutoff: str, avoid: set[str]) -> list[str]:
        """``base`` and its descendants along the newest child older than ``cutoff``
        (else the newest), never into ``avoid``."""
        line = [base]
        while len(line) < MAX_CHECKPOINTS:
            children = [c for c in self.rows[line[-1]].children if c not in avoid]
            if not children:
                break
            older = [c for c in children if c < cutoff]
            line.append((older or children)[-1])
        return line

    def down(self, line: list[str]) -> list[str]:
        """``line`` with each replay copy in it standing for its parent (the tasks ran on
        the copy): the parent left out."""
        kept: list[str] = []
        for checkpoint_id in line:
            if kept and self.is_copy(checkpoint_id, kept[-1]):
                kept[-1] = checkpoint_id
            else:
                kept.append(checkpoint_id)
        return kept

    def one_run(self, line: list[str]) -> list[str]:
        """``line`` up to a new input, which a later run brought: what came of that
        input is no longer the replay's to compare."""
        for i, checkpoint_id in enumerate(line[1:], 1):
            if self.rows[checkpoint_id].source == "input":
                return line[:i]
        return line

    def is_copy(self, checkpoint_id: str, of: str) -> bool:
        row, other = self.rows[checkpoint_id], self.rows[of]
        return row.source == "fork" and row.versions == other.versions

    def copied_sibling(self, checkpoint_id: str, parent: str) -> str | None:
        """The older sibling that ``checkpoint_id`` is a copy of (``__copy__``)."""
        for sibling in reversed(self.rows[parent].children):
            if sibling < checkpoint_id and self.is_copy(checkpoint_id, sibling):
                return sibling
        return None


# -- the steps --------------------------------------------------------------------------


def _compare(
    thread: Thread, tree: _Tree, old_line: list[str], new_line: list[str], report: Divergence
) -> None:
    writes = _Writes(thread.thread_id, graph_of(thread).checkpointer.serde)
    for k in range(1, MAX_STEPS + 1):
        old = _step(thread, tree, writes, old_line, k)
        new = _step(thread, tree, writes, new_line, k)
        if old is None and new is None:
            return
        if new is not None and new.waiting and old is not None:
            if (new.nodes, new.compared()["interrupts"]) == (
                old.nodes,
                old.compared()["interrupts"],
            ):
                report.waiting = True
                return
        skip = frozenset(old.answered_first | new.answered_first) if old and new else frozenset()
        a = old.compared(skip) if old else None
        b = new.compared(skip) if new else None
        if a is not None and a == b:
            report.matched = k
            report.matched_steps.append(
                {"nodes": new.nodes, "old": old.checkpoint_id, "new": new.checkpoint_id}
            )
            continue
        report.status, report.step, report.old, report.new = DIVERGED, k, old, new
        report.differs = [key for key in a if a[key] != b[key]] if a and b else ["steps"]
        report.changes = changes(a, b)
        return
    report.truncated = True


def _step(thread: Thread, tree: _Tree, writes: _Writes, line: list[str], k: int) -> Step | None:
    """Step ``k`` of the branch ``line`` (its shared start first), or ``None``."""
    if k > len(line):
        return None
    ran_on = line[k - 1]
    made = tree.rows[line[k]] if k < len(line) else None
    if made is not None and made.source == "update":
        return _update_step(thread, tree, ran_on, made)
    found = Step(
        ran_on=ran_on,
        checkpoint_id=made.checkpoint_id if made else None,
        step=made.metadata.get("step") if made else None,
        source=made.source if made else "",
    )
    resumed = writes.fill(line, k - 1, found)
    if made is None:
        if not (found.interrupts or found.errors):
            return None
        found.waiting = bool(found.interrupts) and not resumed
    return found


class _Writes:
    """The writes saved on a branch's checkpoints, read ``WRITES_PER_READ`` checkpoints
    of the branch at a time, ahead of the steps that need them."""

    def __init__(self, thread_id: str, serde):
        self.thread_id = thread_id
        self.serde = serde
        self.rows: dict[str, list[tuple]] = {}

    def _rows(self, line: list[str], i: int) -> list[tuple]:
        if line[i] not in self.rows:
            batch = [c for c in line[i : i + WRITES_PER_READ] if c not in self.rows]
            for checkpoint_id in batch:
                self.rows[checkpoint_id] = []
            found = (
                CheckpointWrite.objects.filter(
                    thread_id=self.thread_id, checkpoint_ns="", checkpoint_id__in=batch
                )
                .order_by("checkpoint_id", "task_path", "task_id", "idx")
                .values_list("checkpoint_id", "task_path", "channel", "type", "blob")
            )
            for checkpoint_id, *row in found:
                self.rows[checkpoint_id].append(row)
        return self.rows[line[i]]

    def fill(self, line: list[str], i: int, step: Step) -> bool:
        """Fill ``step`` from the writes saved on ``line[i]``; whether an interrupt
        there was answered."""
        resumed = False
        writes: dict[str, dict[str, Any]] = defaultdict(dict)
        for task_path, channel, type_, blob in self._rows(line, i):
            names = writer_names([task_path])
            if channel == RESUME:
                resumed = True
            if not names:
                continue
            node = names[0]
            if node not in step.nodes:
                step.nodes.append(node)
            if channel == RESUME:
                # A task's resume values: one per interrupt() it called, in order.
                given = self._loads(type_, blob)
                for value in given if isinstance(given, list) else [given]:
                    step.answers.append({"node": node, "value": jsonable(value)})
            elif channel == ERROR:
                step.errors.append({"node": node, "error": jsonable(self._loads(type_, blob))})
            elif channel == INTERRUPT:
                fired = self._loads(type_, blob)
                for interrupt in fired if isinstance(fired, (list, tuple)) else [fired]:
                    value = getattr(interrupt, "value", interrupt)
                    step.interrupts.append({"node": node, "value": jsonable(value)})
            elif not channel.startswith(("branch:", "__")):
                writes[node][channel] = jsonable(self._loads(type_, blob))
        step.writes = dict(writes)
        return resumed

    def _loads(self, type_: str | None, blob) -> Any:
        return self.serde.loads_typed((type_, bytes(blob)))


def _update_step(thread: Thread, tree: _Tree, ran_on: str, made: _Row) -> Step:
    """An ``update_state`` as a step: the node it counts as, and the values of the
    channels whose versions it changed."""
    before = tree.rows[ran_on].versions
    changed = [ch for ch, version in made.versions.items() if before.get(ch) != version]
    values = state_at(thread, made.checkpoint_id).values
    node = str(made.metadata.get("as_node") or "(update)")
    wrote = {
        ch: jsonable(values[ch]) for ch in changed if isinstance(values, dict) and ch in values
    }
    return Step(
        ran_on=ran_on,
        checkpoint_id=made.checkpoint_id,
        step=made.metadata.get("step"),
        source=made.source,
        nodes=[node],
        writes={node: wrote} if wrote else {},
        update=True,
    )


def _order(item: dict) -> str:
    return repr(sorted(item.items()))
