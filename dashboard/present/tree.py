"""A page of a thread's checkpoint tree as drawn: its rows (a node, its lane and place,
its links) and each row's HTML, the SVG node and the <li> beside it.

The HTML is built in Python, not in the template: a tree page has 100 rows, and as
template code they were most of the page's time (``benchmarks/NOTES.md``).
``format_html`` escapes every value. The lanes themselves are laid out
by ``dashboard.present.lanes``.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from dashboard.present import lanes
from dashboard.present.links import checkpoint_url, query_params
from durable import history
from durable.models import Thread

# Checkpoints on one page of the tree.
TREE_PAGE = 100
# The detail pane sits below a long tree: what opens in it (the inspector, the fork and
# replay forms) scrolls it into view, or it would open out of sight.
SWAP = "innerHTML show:#checkpoint-detail:top"
# The shape of a node, by the checkpoint's source.
SOURCE_SHAPES = {"input": "input", "loop": "loop", "update": "update", "fork": "fork"}


@dataclass
class TreeRow:
    """A node of the drawn tree: the ``node`` (``durable.history.TreeNode``), its place
    (``lane``; ``x``, ``y`` in px), ``shape`` (its source), its inspector's ``url``, and
    a ``title`` in words; ``svg`` and ``li``: its HTML."""

    node: history.TreeNode
    lane: int
    x: int
    y: int
    shape: str
    url: str
    title: str
    parent_off_page: bool
    children_off_page: int
    svg: str = ""
    li: str = ""


def tree_context(
    thread: Thread,
    *,
    ns: str = "",
    before: str = "",
    after: str = "",
    actions: bool = False,
) -> dict:
    """What the tree partial draws: ``rows``, ``layout``, ``page`` and page links, for
    the ``TREE_PAGE`` checkpoints of ``thread`` in namespace ``ns`` before or after a
    checkpoint id (the newest when neither). With ``actions`` (an operator's page), each
    checkpoint of the graph itself (not of a subgraph) offers Fork and Replay."""
    page = history.tree_page(
        thread.thread_id, ns, before=before or None, after=after or None, limit=TREE_PAGE
    )
    on_page = page.ids
    from_above = {n.checkpoint_id for n in page.nodes if set(n.children) - on_page}
    layout = lanes.layout(page.nodes, from_above)
    rows = [_row(thread, ns, node, layout, on_page) for node in page.nodes]
    diff_a = rows[1].node.checkpoint_id if len(rows) > 1 else ""
    diff_b = rows[0].node.checkpoint_id if rows else ""
    for row in rows:
        row.svg = svg_node(row)
        row.li = list_item(row, diff_a, diff_b, actions=actions and not ns, thread=thread)
    base = reverse("thread-history", args=[thread.pk])
    links = {}
    if page.nodes and page.newer:
        links["newest"] = base + query_params(ns=ns)
        links["newer"] = base + query_params(ns=ns, after=page.nodes[0].checkpoint_id)
    if page.nodes and page.older:
        links["older"] = base + query_params(ns=ns, before=page.nodes[-1].checkpoint_id)
    return {
        "rows": rows,
        "layout": layout,
        "page": page,
        "ns": ns,
        "links": links,
        "namespaces": history.namespaces(thread.thread_id) if ns or page.nodes else [],
    }


def _row(thread, ns, node, layout, on_page) -> TreeRow:
    place = layout.places[node.checkpoint_id]
    return TreeRow(
        node=node,
        lane=place.lane,
        x=place.x,
        y=place.y,
        shape=SOURCE_SHAPES.get(node.source, "loop"),
        url=checkpoint_url(thread, node.checkpoint_id, ns),
        title=node_title(node),
        parent_off_page=bool(node.parent_id) and node.parent_id not in on_page,
        children_off_page=len(set(node.children) - on_page),
    )


def node_title(node: history.TreeNode) -> str:
    """One line saying what a checkpoint is, for the SVG's ``<title>``."""
    parts = [f"step {node.step}" if node.step is not None else "step ?", node.source]
    if node.writers:
        parts.append("written by " + ", ".join(node.writers))
    if node.interrupts:
        state = "answered" if node.resumed else "waiting"
        parts.append(f"interrupt in {', '.join(node.interrupts)} ({state})")
    if node.errors:
        parts.append("error in " + ", ".join(node.errors))
    if len(node.children) > 1:
        parts.append(f"{len(node.children)} branches")
    if node.created_at:
        parts.append(node.created_at.strftime("%Y-%m-%d %H:%M:%S UTC"))
    return " · ".join(parts)


# -- a row's HTML ------------------------------------------------------------------------

SVG_SHAPES = {
    "input": '<rect x="{x0}" y="{y0}" width="10" height="10"/>',
    "update": '<path d="M{x} {top} l7 7 l-7 7 l-7 -7 z"/>',
    "fork": '<path class="hollow" d="M{x} {top} l7 7 l-7 7 l-7 -7 z"/>',
    "loop": '<circle cx="{x}" cy="{y}" r="5"/>',
}


def svg_node(row) -> SafeString:
    """The SVG link of a row's node: its shape, a glyph for an error or an interrupt,
    and a ``<title>`` in words."""
    node = row.node
    classes = f"node node-{row.shape}"
    glyph = ""
    if node.errors:
        classes += " has-error"
        glyph = "✖"
    elif node.interrupts:
        classes += " has-interrupt"
        glyph = "‖"
    shape = SVG_SHAPES[row.shape].format(
        x=row.x, y=row.y, x0=row.x - 5, y0=row.y - 5, top=row.y - 7
    )
    text = (
        format_html('<text x="{}" y="{}" class="glyph">{}</text>', row.x + 8, row.y + 4, glyph)
        if glyph
        else ""
    )
    return format_html(
        '<a href="{}" class="{}" data-checkpoint-id="{}" aria-describedby="cp-{}">'
        "<title>{}</title>{}{}</a>",
        row.url,
        classes,
        node.checkpoint_id,
        node.checkpoint_id,
        row.title,
        mark_safe(shape),  # numbers only
        text,
    )


def list_item(
    row, diff_a: str, diff_b: str, *, actions: bool = False, thread: Thread | None = None
) -> SafeString:
    """The row's <li>: A/B radio buttons, the step (linking to the inspector, into
    the detail pane with htmx), source, writers, badges and time, all in words; with
    ``actions``, Fork and Replay (the forms open in the pane, or as pages)."""
    node = row.node
    step = "?" if node.step is None else node.step
    return format_html(
        '<li id="cp-{id}" data-checkpoint-id="{id}" data-source="{source}" data-lane="{lane}">'
        '<span class="pick">{a}{b}</span>'
        '<a href="{url}" class="step" hx-get="{url}" hx-target="#checkpoint-detail"'
        ' hx-swap="{swap}">step {step}</a>'
        '<span class="source source-{source}">{source}</span>{details}{actions}</li>',
        id=node.checkpoint_id,
        source=node.source,
        lane=row.lane,
        a=_radio("a", "A", node, step, diff_a),
        b=_radio("b", "B", node, step, diff_b),
        url=row.url,
        swap=SWAP,
        step=step,
        details=_details(row),
        actions=_actions(thread, node, step) if actions and thread is not None else "",
    )


def _actions(thread: Thread, node, step) -> SafeString:
    links = format_html_join(
        "",
        '<a href="{}" class="button small {}" hx-get="{}" hx-target="#checkpoint-detail"'
        ' hx-swap="{}" aria-label="{} from step {}">{}</a>',
        (
            (url, kind, url, SWAP, label, step, label)
            for kind, label in (("fork", "Fork"), ("replay", "Replay"))
            for url in [reverse(kind, args=[thread.pk, node.checkpoint_id])]
        ),
    )
    return format_html('<span class="cp-actions">{}</span>', links)


def _radio(name: str, side: str, node, step, chosen: str) -> SafeString:
    return format_html(
        '<input type="radio" name="{}" value="{}" aria-label="Diff: use step {} ({}) as {}"{}>',
        name,
        node.checkpoint_id,
        step,
        node.checkpoint_id,
        side,
        mark_safe(" checked") if node.checkpoint_id == chosen else "",
    )


def _details(row) -> SafeString:
    node = row.node
    parts = []
    if node.writers:
        names = format_html_join(", ", "<code>{}</code>", ((w,) for w in node.writers))
        verb = "as" if node.source == "update" else "by"
        parts.append(format_html('<span class="writers">{} {}</span>', verb, names))
    if node.interrupts:
        answered = " (answered)" if node.resumed else ""
        parts.append(
            format_html(
                '<span class="badge badge-interrupt">‖ interrupt in {}{}</span>',
                ", ".join(node.interrupts),
                answered,
            )
        )
    if node.errors:
        parts.append(
            format_html(
                '<span class="badge badge-error">✖ error in {}</span>', ", ".join(node.errors)
            )
        )
    if len(node.children) > 1:
        parts.append(
            format_html('<span class="badge badge-branch">⋔ {} branches</span>', len(node.children))
        )
    if row.parent_off_page:
        parts.append(mark_safe('<span class="small">↓ parent on an older page</span>'))
    if row.children_off_page:
        n = row.children_off_page
        parts.append(
            format_html(
                '<span class="small">↑ {} child{} on a newer page</span>',
                n,
                "ren" if n != 1 else "",
            )
        )
    if node.created_at:
        parts.append(
            format_html(
                '<time class="small" datetime="{}">{}</time>',
                node.created_at.isoformat(),
                node.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            )
        )
    return mark_safe("".join(parts))
