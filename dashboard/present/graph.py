"""A picture of a graph from LangGraph's own drawing (``compiled.get_graph()``), laid out
here in layers so that no JavaScript renderer or CDN is needed.

Each node's layer is its longest distance from ``__start__`` along edges that do not
close a cycle; edges that do (a loop back) are drawn curving round the right side.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

BOX_W, BOX_H = 150, 36
GAP_X, GAP_Y = 30, 46
PAD = 16
# Characters of a label that fit in a box at the page's 13px monospace.
BOX_CHARS = 17


@dataclass
class Box:
    id: str
    label: str
    x: int
    y: int
    current: bool = False

    @property
    def cx(self) -> int:
        return self.x + BOX_W // 2

    @property
    def text(self) -> str:
        """The label as the box shows it: cut with "…" where it would run past the box
        (the box's ``<title>`` and the page's list of nodes have it whole)."""
        text = f"▶ {self.label}" if self.current else self.label
        return text if len(text) <= BOX_CHARS else text[: BOX_CHARS - 1] + "…"


@dataclass
class Arrow:
    source: str
    target: str
    path: str
    conditional: bool = False
    back: bool = False


@dataclass
class Picture:
    """``boxes`` by node id, ``arrows``, and the drawing's ``width``/``height`` (px)."""

    boxes: dict[str, Box] = field(default_factory=dict)
    arrows: list[Arrow] = field(default_factory=list)
    width: int = 0
    height: int = 0


def picture(drawing, current: set[str] = frozenset()) -> Picture:
    """Lay out ``drawing`` (a ``langchain_core`` ``Graph``); ``current`` node ids (the
    thread's next nodes) are marked."""
    node_ids = list(drawing.nodes)
    edges = [(e.source, e.target, bool(e.conditional)) for e in drawing.edges]
    back = _back_edges(node_ids, edges)
    layers = _layers(node_ids, [(s, t) for s, t, _ in edges if (s, t) not in back])
    result = Picture()
    rows: dict[int, list[str]] = defaultdict(list)
    for node_id in node_ids:
        rows[layers[node_id]].append(node_id)
    widest = max((len(r) for r in rows.values()), default=1)
    result.width = 2 * PAD + widest * BOX_W + (widest - 1) * GAP_X + 40
    for layer, members in sorted(rows.items()):
        span = len(members) * BOX_W + (len(members) - 1) * GAP_X
        left = PAD + ((widest * BOX_W + (widest - 1) * GAP_X) - span) // 2
        for i, node_id in enumerate(members):
            node = drawing.nodes[node_id]
            result.boxes[node_id] = Box(
                node_id,
                str(getattr(node, "name", node_id)),
                left + i * (BOX_W + GAP_X),
                PAD + layer * (BOX_H + GAP_Y),
                node_id in current,
            )
    result.height = PAD * 2 + (max(rows, default=0) + 1) * (BOX_H + GAP_Y) - GAP_Y
    for source, target, conditional in edges:
        if source in result.boxes and target in result.boxes:
            is_back = (source, target) in back
            path = _arrow_path(result.boxes[source], result.boxes[target], is_back, result.width)
            result.arrows.append(Arrow(source, target, path, conditional, is_back))
    return result


def _back_edges(node_ids: list[str], edges: list[tuple[str, str, bool]]) -> set[tuple]:
    """Edges that close a cycle, found by a depth-first walk from ``__start__``."""
    out: dict[str, list[str]] = defaultdict(list)
    for source, target, _ in edges:
        out[source].append(target)
    state: dict[str, int] = {}  # 1 = on the walk's stack, 2 = done
    back: set[tuple] = set()
    starts = ["__start__"] if "__start__" in node_ids else []
    for root in starts + node_ids:
        if root in state:
            continue
        stack = [(root, iter(out[root]))]
        state[root] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
            elif state.get(child) == 1:
                back.add((node, child))
            elif child not in state:
                state[child] = 1
                stack.append((child, iter(out[child])))
    return back


def _layers(node_ids: list[str], edges: list[tuple[str, str]]) -> dict[str, int]:
    """Longest-path layer of each node in the acyclic ``edges`` (Kahn's order)."""
    incoming: dict[str, int] = {n: 0 for n in node_ids}
    out: dict[str, list[str]] = defaultdict(list)
    for source, target in edges:
        if source in incoming and target in incoming:
            out[source].append(target)
            incoming[target] += 1
    layer = {n: 0 for n in node_ids}
    ready = [n for n in node_ids if incoming[n] == 0]
    while ready:
        node = ready.pop(0)
        for target in out[node]:
            layer[target] = max(layer[target], layer[node] + 1)
            incoming[target] -= 1
            if incoming[target] == 0:
                ready.append(target)
    if "__end__" in layer:  # the end below everything
        layer["__end__"] = max(layer.values()) if len(layer) > 1 else 0
        if any(v == layer["__end__"] for k, v in layer.items() if k != "__end__"):
            layer["__end__"] += 1
    return layer


def _arrow_path(a: Box, b: Box, back: bool, width: int) -> str:
    if back:
        side = width - 20
        return (
            f"M{a.x + BOX_W} {a.y + BOX_H // 2} C{side} {a.y + BOX_H // 2} "
            f"{side} {b.y + BOX_H // 2} {b.x + BOX_W} {b.y + BOX_H // 2}"
        )
    x1, y1, x2, y2 = a.cx, a.y + BOX_H, b.cx, b.y
    mid = (y1 + y2) // 2
    return f"M{x1} {y1} C{x1} {mid} {x2} {mid} {x2} {y2}"
