"""The store browser: LangGraph's long-term memory (``DjangoStore``),
read-only.

``/store/?ns=a.b&filter=...&page=N``: the namespaces as a tree, and the items under
namespace prefix ``ns`` (labels joined with ``.``, which LangGraph forbids inside a
label) that match ``filter``, newest first, ``ITEMS_PER_PAGE`` a page. A filter is
``key=value`` pairs separated by commas or new lines (a value is read as JSON when it
parses, else as text), or a JSON object in the store's own filter language
(``{"key": value}`` or ``{"key": {"$gt": 1}}``). Reads never refresh an item's TTL.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard import access
from dashboard.filters import has_nul

ITEMS_PER_PAGE = 20
# Namespaces the tree shows at most; beyond that the page says so.
NAMESPACES_SHOWN = 500
MAX_PAGE = 1_000_000


class BadFilter(ValueError):
    """A filter the page cannot read; the message says why."""


@dataclass
class Node:
    """One label of the namespace tree: its ``path`` (the namespace up to it, joined
    with ``.``), whether items live exactly there (``leaf``) and its ``children``."""

    label: str
    path: str
    leaf: bool = False
    children: list[Node] = field(default_factory=list)


def tree(namespaces: list[tuple[str, ...]]) -> list[Node]:
    """Nest sorted namespaces label by label."""
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


def parse_filter(text: str) -> dict | None:
    """The store filter written in ``text`` (see the module's docstring); ``None``
    for none. Raises ``BadFilter``."""
    text = text.strip()
    if not text:
        return None
    parsed = _parse_filter(text)
    if has_nul(parsed):
        raise BadFilter("filter: the store cannot hold a NUL character, so none is searched.")
    return parsed


def _parse_filter(text: str) -> dict:
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BadFilter(f"filter: not valid JSON: {exc}.") from None
        if not isinstance(parsed, dict):
            raise BadFilter("filter: a JSON filter must be an object.")
        return parsed
    result = {}
    for part in text.replace("\n", ",").split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise BadFilter(f"filter: {part.strip()!r} is not key=value.")
        result[key.strip()] = _json_or_text(value.strip())
    return result


def _json_or_text(value: str):
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def _page_number(text: str) -> int:
    """``?page=``: 1 unless a positive number; at most ``MAX_PAGE`` (a bigger offset
    overflows the database's integers)."""
    text = text.lstrip("0")
    if not (text.isascii() and text.isdigit()):
        return 1
    return MAX_PAGE if len(text) > len(str(MAX_PAGE)) else min(int(text), MAX_PAGE)


@require_GET
def store(request):
    """The store page; a bad filter or namespace is shown with its error (400), and
    no item is listed."""
    store = access.store(request)
    ns_text = request.GET.get("ns", "").strip().strip(".")
    prefix = tuple(label for label in ns_text.split(".") if label)
    filter_text = request.GET.get("filter", "")
    page = _page_number(request.GET.get("page", ""))
    namespaces = store.list_namespaces(limit=NAMESPACES_SHOWN + 1)
    context = {
        "tree": tree(namespaces[:NAMESPACES_SHOWN]),
        "more_namespaces": len(namespaces) > NAMESPACES_SHOWN,
        "ns": ".".join(prefix),
        "crumbs": [(label, ".".join(prefix[: i + 1])) for i, label in enumerate(prefix)],
        "filter_text": filter_text,
        "page": page,
        "items": [],
        "error": "",
    }
    try:
        found = store.search(
            prefix,
            filter=parse_filter(filter_text),
            limit=ITEMS_PER_PAGE + 1,
            offset=(page - 1) * ITEMS_PER_PAGE,
            refresh_ttl=False,
        )
    except (BadFilter, ValueError) as exc:
        context["error"] = str(exc) if isinstance(exc, BadFilter) else f"filter: {exc}"
        return render(request, "dashboard/store.html", context, status=400)
    context["items"] = found[:ITEMS_PER_PAGE]
    context["has_next"] = len(found) > ITEMS_PER_PAGE
    return render(request, "dashboard/store.html", context)
