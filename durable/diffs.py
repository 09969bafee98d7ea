"""What changed between two values (states, a step's writes): the paths that differ,
found by DeepDiff. The console shows them (``dashboard.present.diffs``) and the API
returns them (a replay's divergence, ``durable.reports.divergence``).

Lists of messages are compared by message id, not by position: a message inserted in
the middle is one added path, not every later message changed. Their paths read
``messages[id=abc].content``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deepdiff import DeepDiff

from durable.values import is_message, jsonable

ADDED, REMOVED, CHANGED = "added", "removed", "changed"
_KINDS = {
    "dictionary_item_added": ADDED,
    "iterable_item_added": ADDED,
    "set_item_added": ADDED,
    "attribute_added": ADDED,
    "dictionary_item_removed": REMOVED,
    "iterable_item_removed": REMOVED,
    "set_item_removed": REMOVED,
    "attribute_removed": REMOVED,
    "values_changed": CHANGED,
    "type_changes": CHANGED,
}


@dataclass
class Change:
    """One changed path: ``kind`` (added / removed / changed), ``path`` (text), and the
    ``old``/``new`` values (``None`` when absent on that side)."""

    kind: str
    path: str
    old: Any = None
    new: Any = None


def changes(a: Any, b: Any) -> list[Change]:
    """The paths that differ from ``a`` to ``b``, in path order."""
    diff = DeepDiff(
        _keyed(jsonable(a)),
        _keyed(jsonable(b)),
        view="tree",
        verbose_level=2,
        # Always name the paths inside, however little two objects share.
        threshold_to_diff_deeper=0,
    )
    found = []
    for category, levels in diff.items():
        kind = _KINDS.get(category, CHANGED)
        for level in levels:
            found.append(
                Change(
                    kind=kind,
                    path=path_text(level.path(output_format="list")),
                    old=None if kind == ADDED else level.t1,
                    new=None if kind == REMOVED else level.t2,
                )
            )
    return sorted(found, key=lambda c: c.path)


def path_text(parts: list) -> str:
    """``['messages', 'id=1', 'content']`` → ``messages[id=1].content``."""
    text = ""
    for part in parts:
        if isinstance(part, int) or (isinstance(part, str) and part.startswith("id=")):
            text += f"[{part}]"
        elif text:
            text += f".{part}"
        else:
            text = str(part)
    return text or "(the whole state)"


def _keyed(value: Any) -> Any:
    """``value`` with each list of messages that all have ids turned into a dict keyed
    ``id=<id>``, recursively."""
    if isinstance(value, dict):
        return {k: _keyed(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(is_message(m) and m.get("id") for m in value):
            ids = [m["id"] for m in value]
            if len(set(ids)) == len(ids):
                return {f"id={m['id']}": _keyed(m) for m in value}
        return [_keyed(v) for v in value]
    return value
