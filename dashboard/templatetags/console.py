"""The console's template filters: values as pages show them (``dashboard.present``), an
interrupt's kind and actions, sanitised markdown, status icons."""

import markdown as _markdown
import nh3
from django import template
from django.utils.safestring import mark_safe

from dashboard.present import inbox, interrupts, values

register = template.Library()


@register.filter
def pretty(value) -> str:
    """Indented JSON of any state value, as pages show it: long strings and lists cut,
    the cuts marked (``dashboard.present.values.shown``)."""
    return values.shown(value).text


@register.filter
def shown(value) -> values.Shown:
    """``value`` as pages show it, with ``.text`` and ``.cut`` (whether part of it is
    left out), so that a page can link to the whole value."""
    return values.shown(value)


@register.filter
def clip(text, limit: int = values.STRING_LIMIT) -> str:
    """``text`` cut at ``limit`` characters, the cut marked."""
    return values.clip(text, int(limit))


@register.filter
def interrupt_kind(value) -> str:
    return interrupts.kind_of(value)


@register.filter
def hitl_actions(value):
    return interrupts.hitl_actions(value)


@register.filter
def markdown(text) -> str:
    """``text`` as markdown rendered to HTML, then sanitised by nh3 (a safelist: no
    scripts, styles, event handlers or ``javascript:`` links), so an interrupt's
    description can format itself but not run code in the console."""
    html = _markdown.markdown(str(text or ""), extensions=["sane_lists"])
    return mark_safe(nh3.clean(html, link_rel="noopener noreferrer nofollow"))


@register.filter
def status_icon(status: str) -> str:
    """A symbol for a run or thread status, shown beside its name (never alone)."""
    return STATUS_ICONS.get(status, "•")


# Glyphs that Debian's default fonts (DejaVu) have: ⏸ and ⌛ showed as empty boxes there.
# ‖ is also the tree's mark of an interrupt.
STATUS_ICONS = {
    "pending": "◌",
    "running": "▶",
    "busy": "▶",
    "success": "✓",
    "idle": "✓",
    "interrupted": "‖",
    "error": "✗",
    "timeout": "◷",
    "cancelled": "⊘",
}


@register.filter
def get_key(mapping, key):
    """``mapping[key]``, or ``None`` (state keys are not template identifiers)."""
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def ago(when) -> str:
    """``"3 hours ago"``, or ``"just now"`` under a minute (``present.inbox.ago``)."""
    return inbox.ago(when) if when else ""
