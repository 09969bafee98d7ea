"""The HTML of one tree row, the SVG node and the <li> beside it, built in Python.

A tree page has 100 rows; as template code each row took about 1.5 ms (a thousand
variable lookups a page), which was most of the page's time. ``format_html`` escapes
every value.
"""

from __future__ import annotations

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

SHAPES = {
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
    shape = SHAPES[row.shape].format(x=row.x, y=row.y, x0=row.x - 5, y0=row.y - 5, top=row.y - 7)
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


def list_item(row, diff_a: str, diff_b: str) -> SafeString:
    """The row's <li>: A/B radio buttons, the step (linking to the inspector, into
    the detail pane with htmx), source, writers, badges and time, all in words."""
    node = row.node
    step = "?" if node.step is None else node.step
    return format_html(
        '<li id="cp-{id}" data-checkpoint-id="{id}" data-source="{source}" data-lane="{lane}">'
        '<span class="pick">{a}{b}</span>'
        '<a href="{url}" class="step" hx-get="{url}" hx-target="#checkpoint-detail"'
        ' hx-swap="innerHTML">step {step}</a>'
        '<span class="source source-{source}">{source}</span>{details}</li>',
        id=node.checkpoint_id,
        source=node.source,
        lane=row.lane,
        a=_radio("a", "A", node, step, diff_a),
        b=_radio("b", "B", node, step, diff_b),
        url=row.url,
        step=step,
        details=_details(row),
    )


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
