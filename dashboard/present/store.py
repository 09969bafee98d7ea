"""The store browser's namespace tree: sorted namespaces nested label by label."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Node:
    """One label of the namespace tree: its ``path`` (the namespace up to it, joined
    with ``.``), whether items live exactly there (``leaf``) and its ``children``."""

    label: str
    path: str
    leaf: bool = False
    children: list[Node] = field(default_factory=list)


def tree(namespaces: list[tuple[str, ...]]) -> list[Node]:
    """Nest sorted namespaces label by label; the roots, in order."""
    roots: list[Node] = []
    index: dict[tuple[str, ...], Node] = {}
    for namespace in namespaces:
        for depth in range(1, len(namespace) + 1):
            prefix = namespace[:depth]
            if prefix not in index:
                node = Node(prefix[-1], ".".join(prefix))
                index[prefix] = node
                siblings = index[prefix[:-1]].children if depth > 1 else roots
                siblings.append(node)
        index[namespace].leaf = True
    return roots
