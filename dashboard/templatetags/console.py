from django import template

from dashboard import interrupts
from durable.values import pretty as _pretty

register = template.Library()


@register.filter
def pretty(value) -> str:
    """Indented JSON of any state value."""
    return _pretty(value)


@register.filter
def interrupt_kind(value) -> str:
    return interrupts.kind_of(value)


@register.filter
def hitl_actions(value):
    return interrupts.hitl_actions(value)


@register.filter
def field(form, name):
    """The bound field ``name`` of ``form`` (names built from interrupt ids)."""
    return form[name]


@register.simple_tag
def field_name(*parts) -> str:
    return "-".join(str(p) for p in parts)
