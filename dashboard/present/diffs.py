"""What changed between two states: paths (DeepDiff) and a side-by-side line diff.

Lists of messages are compared by message id, not by position: a message inserted in
the middle is one added path, not every later message changed. Their paths read
``messages[id=abc].content``.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from durable.diffs import ADDED, CHANGED, REMOVED, Change, changes, path_text
from durable.redaction import MASK, masked_paths, redact, value_at
from durable.values import pretty

__all__ = [
    "ADDED",
    "CHANGED",
    "REMOVED",
    "Change",
    "Line",
    "changes",
    "masked_changes",
    "path_text",
    "side_by_side",
    "state_changes",
]

CONTEXT_LINES = 3


@dataclass
class Line:
    """A row of the side-by-side diff. ``kind``: ``equal``, ``replace``, ``delete``,
    ``insert``, or ``skip`` (``a_no`` unchanged lines left out)."""

    kind: str
    a_no: int | None = None
    a_text: str = ""
    b_no: int | None = None
    b_text: str = ""


def masked_changes(a: Any, b: Any) -> list[Change]:
    """The sensitive values (``durable.redaction``) that differ from state ``a`` to
    state ``b`` though both are masked: a diff of the masked states shows them equal, so
    each is a ``changed`` path with ``MASK`` on both sides."""
    in_b = set(masked_paths(b))
    return [
        Change(
            CHANGED, path_text([int(p) if p.isdigit() else p for p in path.split(".")]), MASK, MASK
        )
        for path in masked_paths(a)
        if path in in_b and value_at(a, path) != value_at(b, path)
    ]


def state_changes(a: Any, b: Any) -> list[Change]:
    """The paths that differ from state ``a`` to state ``b``, masked before they are
    compared (a secret that changed is named, masked), in path order."""
    return sorted(
        changes(redact(a), redact(b)) + masked_changes(a, b),
        key=lambda c: c.path,
    )


def side_by_side(a: Any, b: Any, context: int = CONTEXT_LINES) -> list[Line]:
    """Rows of a line diff of the pretty JSON of ``a`` and ``b``; runs of unchanged
    lines longer than twice ``context`` are cut to ``context`` lines each side. Lines are
    compared without their trailing comma: a key added after the last one puts a comma
    on the line before it, which is not a change of that line."""
    left, right = pretty(a).splitlines(), pretty(b).splitlines()
    rows: list[Line] = []
    matcher = difflib.SequenceMatcher(
        None,
        [line.removesuffix(",") for line in left],
        [line.removesuffix(",") for line in right],
        autojunk=False,
    )
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows.extend(_equal_rows(left, right, i1, i2, j1, context))
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            i, j = i1 + k, j1 + k
            rows.append(
                Line(
                    kind=tag,
                    a_no=i + 1 if i < i2 else None,
                    a_text=left[i] if i < i2 else "",
                    b_no=j + 1 if j < j2 else None,
                    b_text=right[j] if j < j2 else "",
                )
            )
    _trim_edges(rows, context)
    return rows


def _equal_rows(
    left: list[str], right: list[str], i1: int, i2: int, j1: int, context: int
) -> list[Line]:
    def row(i: int) -> Line:
        j = j1 + (i - i1)
        return Line("equal", i + 1, left[i], j + 1, right[j])

    if i2 - i1 <= 2 * context:
        return [row(i) for i in range(i1, i2)]
    head = [row(i) for i in range(i1, i1 + context)]
    tail = [row(i) for i in range(i2 - context, i2)]
    return [*head, Line("skip", a_no=i2 - i1 - 2 * context), *tail]


def _trim_edges(rows: list[Line], context: int) -> None:
    """Unchanged lines before the first change and after the last keep ``context``."""
    changed = [i for i, r in enumerate(rows) if r.kind not in ("equal", "skip")]
    if not changed:
        rows[:] = []
        return
    last = changed[-1] + context + 1
    if last < len(rows):
        cut = sum(r.a_no if r.kind == "skip" else 1 for r in rows[last:])
        rows[last:] = [Line("skip", a_no=cut)]
    first = max(changed[0] - context, 0)
    if first > 0:
        cut = sum(r.a_no if r.kind == "skip" else 1 for r in rows[:first])
        rows[:first] = [Line("skip", a_no=cut)]
