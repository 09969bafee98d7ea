"""Lanes for a page of a checkpoint tree, as ``git log --graph`` draws commits.

Rows are checkpoints newest first. Each lane waits for one checkpoint id: the parent of
the last node drawn in it. A node takes the lane that waits for it (other lanes waiting
for it end there: their branches join it), or the first free lane when none does (it
is a branch's newest checkpoint). Edges run down their child's lane and bend into the
parent's row. A parent on an older page makes the edge run off the bottom; a child on a
newer page makes one come in from the top.

Only the page's rows take part, so a page of 100 checkpoints costs the same in a thread
of 10 or of 10,000.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

ROW = 32  # px between rows; the <ol> beside the SVG uses the same height
LANE = 18  # px between lanes
PAD = 12


@dataclass
class Placed:
    """A node's place: ``row`` (0 = newest), ``lane`` (0 = leftmost), and the centre."""

    row: int
    lane: int

    @property
    def x(self) -> int:
        return PAD + self.lane * LANE

    @property
    def y(self) -> int:
        return ROW // 2 + self.row * ROW


@dataclass
class Layout:
    """``places`` by checkpoint id; ``paths``: SVG path data of the edges; ``lanes``:
    how many lanes the page uses; ``width``/``height`` of the drawing in px."""

    places: dict[str, Placed] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)
    lanes: int = 0

    @property
    def width(self) -> int:
        return 2 * PAD + max(self.lanes - 1, 0) * LANE

    @property
    def height(self) -> int:
        return max(len(self.places), 1) * ROW


def layout(nodes: Sequence, from_above: set[str] = frozenset()) -> Layout:
    """Place ``nodes`` (newest first; each has ``checkpoint_id`` and ``parent_id``).

    ``from_above``: ids of nodes with a child on a newer page. Returns the ``Layout``."""
    result = Layout()
    waiting: list[str | None] = [n.checkpoint_id for n in nodes if n.checkpoint_id in from_above]
    for row, node in enumerate(nodes):
        lane = _take_lane(waiting, node.checkpoint_id)
        result.places[node.checkpoint_id] = Placed(row, lane)
        waiting[lane] = node.parent_id
        result.lanes = max(result.lanes, len(waiting))
    _edges(result, nodes, from_above)
    return result


def _take_lane(waiting: list[str | None], checkpoint_id: str) -> int:
    hits = [i for i, wanted in enumerate(waiting) if wanted == checkpoint_id]
    if hits:
        for joined in hits[1:]:
            waiting[joined] = None
        return hits[0]
    if None in waiting:
        return waiting.index(None)
    waiting.append(None)
    return len(waiting) - 1


def _edges(result: Layout, nodes: Sequence, from_above: set[str]) -> None:
    paths: list[str] = []
    bottom = result.height
    for node in nodes:
        here = result.places[node.checkpoint_id]
        if node.checkpoint_id in from_above:
            paths.append(f"M{here.x} 0 V{here.y}")
        if not node.parent_id:
            continue
        parent = result.places.get(node.parent_id)
        if parent is None:
            paths.append(f"M{here.x} {here.y} V{bottom}")
        elif parent.lane == here.lane:
            paths.append(f"M{here.x} {here.y} V{parent.y}")
        else:
            bend = parent.y - ROW // 2
            paths.append(
                f"M{here.x} {here.y} V{bend} "
                f"C{here.x} {parent.y} {parent.x} {bend} {parent.x} {parent.y}"
            )
    result.paths = paths
