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

from durable.redaction import redact
from durable.values import is_message, jsonable, pretty

# What a page shows of one value (``shorten``): a state can hold megabytes (a document,
# a base64 image), and a page that printed it whole, in every place it appears, weighed
# several times that. Longer strings, lists and objects are cut, with a marker saying how
# much is left out; the whole value is one link away (``views.checkpoints.checkpoint_json``).
STRING_LIMIT = 2_000
ITEMS_LIMIT = 100
# A message of a transcript is text to read: it keeps more.
MESSAGE_LIMIT = 20_000
# And whatever the shape, the shown JSON text of one value stops here.
TEXT_LIMIT = 50_000
# Past this size a value is shown as plain text: highlighting a few MB takes seconds.
HIGHLIGHT_LIMIT = 200_000
# A value longer than this (as JSON text) is not put in a form to edit: the form says so,
# and leaving it out keeps it as it is.
EDIT_LIMIT = 100_000
ROLE_NAMES = {"human": "Human", "ai": "AI", "tool": "Tool", "system": "System"}

_FORMATTER = HtmlFormatter(nowrap=True)
_LEXER = JsonLexer()


@dataclass
class Shown:
    """What a page shows of a value: its indented JSON ``text``, and whether anything
    was left out of it (``cut``)."""

    text: str
    cut: bool

    def __str__(self) -> str:
        return self.text


def shorten(value: Any) -> tuple[Any, bool]:
    """A JSON-safe copy of ``value`` for display, its sensitive values masked
    (``durable.redaction``), with strings past ``STRING_LIMIT``
    characters and lists or objects past ``ITEMS_LIMIT`` items cut, each cut marked
    ("… [+N characters]", "… [+N items]"); and whether anything was cut."""
    cut = False

    def walk(item: Any) -> Any:
        nonlocal cut
        if isinstance(item, str):
            if len(item) > STRING_LIMIT:
                cut = True
                return f"{item[:STRING_LIMIT]}… [+{len(item) - STRING_LIMIT:,} characters]"
            return item
        if isinstance(item, list):
            kept = [walk(v) for v in item[:ITEMS_LIMIT]]
            if len(item) > ITEMS_LIMIT:
                cut = True
                kept.append(f"… [+{len(item) - ITEMS_LIMIT:,} items]")
            return kept
        if isinstance(item, dict):
            keys = list(item)
            kept = {clip(k): walk(item[k]) for k in keys[:ITEMS_LIMIT]}
            if len(keys) > ITEMS_LIMIT:
                cut = True
                kept["…"] = f"[+{len(keys) - ITEMS_LIMIT:,} keys]"
            return kept
        return item

    return walk(jsonable(redact(value))), cut


def shown(value: Any) -> Shown:
    """``value`` as a page shows it: ``shorten``ed, indented, and at most
    ``TEXT_LIMIT`` characters."""
    short, cut = shorten(value)
    text = pretty(short)
    if len(text) > TEXT_LIMIT:
        text = f"{text[:TEXT_LIMIT]}\n… [+{len(text) - TEXT_LIMIT:,} characters]"
        cut = True
    return Shown(text, cut)


def clip(text: Any, limit: int = STRING_LIMIT) -> str:
    """``text`` cut at ``limit`` characters, the cut marked."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [+{len(text) - limit:,} characters]"


def json_html(value: Any) -> SafeString:
    """``value`` as indented JSON, ``shorten``ed, highlighted: HTML for inside a
    ``<pre>``."""
    return highlighted(shown(value).text)


def highlighted(text: str) -> SafeString:
    """JSON ``text`` highlighted: HTML for inside a ``<pre>``."""
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
    cut: bool = False


@dataclass
class StateKey:
    """One key of a state: ``transcript`` when it holds messages, else ``html``;
    ``cut`` when the page shows less than the whole value."""

    key: str
    summary: str
    html: SafeString | None = None
    transcript: list[Message] | None = None
    cut: bool = False
    json_url: str = ""


def state_keys(values: Any) -> list[StateKey]:
    """Each key of a state's ``values`` (a dict; anything else is one key, ``value``),
    masked as a whole (``durable.redaction``: paths start at the state)."""
    if not isinstance(values, dict):
        values = {"value": values}
    values = redact(values)
    return [_state_key(str(key), value) for key, value in values.items()]


def _state_key(key: str, value: Any) -> StateKey:
    messages = as_messages(value)
    if messages is not None:
        count = len(messages)
        return StateKey(
            key,
            f"{count} message{'s' if count != 1 else ''}",
            transcript=messages[:ITEMS_LIMIT],
            cut=count > ITEMS_LIMIT or any(m.cut for m in messages[:ITEMS_LIMIT]),
        )
    text = shown(value)
    return StateKey(key, _summary(value), html=highlighted(text.text), cut=text.cut)


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


def _message(item: dict) -> Message:
    text, parts = _content(item.get("content"))
    return Message(
        role=ROLE_NAMES.get(item["type"], item["type"].title()),
        id=str(item.get("id") or ""),
        name=str(item.get("name") or ""),
        text=clip(text, MESSAGE_LIMIT),
        cut=len(text) > MESSAGE_LIMIT,
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
