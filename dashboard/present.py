"""State values made readable: highlighted JSON, and LangChain messages as a transcript.

Highlighting runs on the server with Pygments (class-based CSS in
``static/dashboard/history.css``), so pages need no JavaScript.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import JsonLexer

from durable.values import jsonable, pretty

# Past this size a value is shown as plain text: highlighting a few MB takes seconds.
HIGHLIGHT_LIMIT = 200_000
MESSAGE_TYPES = {"human", "ai", "tool", "system", "function", "chat", "remove"}
ROLE_NAMES = {"human": "Human", "ai": "AI", "tool": "Tool", "system": "System"}

_FORMATTER = HtmlFormatter(nowrap=True)
_LEXER = JsonLexer()


def json_html(value: Any) -> SafeString:
    """``value`` as indented JSON, highlighted: HTML for inside a ``<pre>``."""
    text = pretty(value)
    if len(text) > HIGHLIGHT_LIMIT:
        return escape(text)
    return mark_safe(highlight(text, _LEXER, _FORMATTER))  # Pygments escapes the text


@dataclass
class ToolCall:
    name: str
    id: str
    args: Any


@dataclass
class Message:
    """One message of a transcript: ``role`` (``Human``, ``AI``, ``Tool``...),
    ``text`` (its text content), ``parts`` (non-text content blocks), ``tool_calls``,
    and for a tool result ``tool_call_id`` and ``status`` (``"error"`` for a failed
    tool)."""

    role: str
    id: str = ""
    name: str = ""
    text: str = ""
    parts: list = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str = ""
    status: str = ""


@dataclass
class StateKey:
    """One key of a state: ``transcript`` when it holds messages, else ``html``."""

    key: str
    summary: str
    html: SafeString | None = None
    transcript: list[Message] | None = None


def state_keys(values: Any) -> list[StateKey]:
    """Each key of a state's ``values`` (a dict; anything else is one key, ``value``)."""
    if not isinstance(values, dict):
        values = {"value": values}
    return [_state_key(str(key), value) for key, value in values.items()]


def _state_key(key: str, value: Any) -> StateKey:
    messages = as_messages(value)
    if messages is not None:
        count = len(messages)
        return StateKey(key, f"{count} message{'s' if count != 1 else ''}", transcript=messages)
    return StateKey(key, _summary(value), html=json_html(jsonable(value)))


def _summary(value: Any) -> str:
    if isinstance(value, dict):
        return f"object, {len(value)} key{'s' if len(value) != 1 else ''}"
    if isinstance(value, (list, tuple)):
        return f"list, {len(value)} item{'s' if len(value) != 1 else ''}"
    if value is None:
        return "null"
    return type(value).__name__


def as_messages(value: Any) -> list[Message] | None:
    """``value`` as a transcript when it is a non-empty list of LangChain messages
    (message objects, or their dicts with ``type`` and ``content``); else ``None``."""
    if not isinstance(value, (list, tuple)) or not value:
        return None
    items = [jsonable(item) for item in value]
    if not all(is_message(item) for item in items):
        return None
    return [_message(item) for item in items]


def is_message(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") in MESSAGE_TYPES and "content" in item


def _message(item: dict) -> Message:
    text, parts = _content(item.get("content"))
    return Message(
        role=ROLE_NAMES.get(item["type"], item["type"].title()),
        id=str(item.get("id") or ""),
        name=str(item.get("name") or ""),
        text=text,
        parts=[json_html(p) for p in parts],
        tool_calls=[
            ToolCall(str(c.get("name", "")), str(c.get("id") or ""), json_html(c.get("args")))
            for c in item.get("tool_calls") or []
            if isinstance(c, dict)
        ],
        tool_call_id=str(item.get("tool_call_id") or ""),
        status=str(item.get("status") or "") if item["type"] == "tool" else "",
    )


def _content(content: Any) -> tuple[str, list]:
    """Text of a message's content, and its other blocks (images, tool use...)."""
    if isinstance(content, str):
        return content, []
    texts, parts = [], []
    for block in content if isinstance(content, list) else [content]:
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        else:
            parts.append(block)
    return "\n".join(texts), parts


def pygments_css() -> str:
    """The CSS rules of the highlighting, scoped to ``.highlight`` (for history.css)."""
    return HtmlFormatter().get_style_defs(".highlight")
