"""Turning graph state into JSON for storage on a Run and for display.

State can hold anything LangGraph's serializer handles (Pydantic models, dataclasses,
LangChain messages, sets, datetimes...). This makes a JSON-safe *view* of it; the
checkpoint itself is untouched.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import uuid
from typing import Any

# The ``type`` of a LangChain message as JSON (``message.model_dump()``).
MESSAGE_TYPES = frozenset({"human", "ai", "tool", "system", "function", "chat", "remove"})


def is_message(item: Any) -> bool:
    """Whether ``item`` is a LangChain message as JSON: a dict with a message ``type``
    and ``content``."""
    return (
        isinstance(item, dict)
        and isinstance(item.get("type"), str)
        and item["type"] in MESSAGE_TYPES
        and "content" in item
    )


def _default(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (uuid.UUID, decimal.Decimal)):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return repr(value)


def jsonable(value: Any) -> Any:
    """A JSON-safe copy of ``value`` that every database's JSON column accepts: unknown
    objects become their ``repr``, NaN and infinities the strings ``"NaN"``,
    ``"Infinity"``, ``"-Infinity"``, and NUL characters U+FFFD (PostgreSQL's jsonb
    rejects ``\\u0000``)."""
    text = json.dumps(value, default=_default).replace("\\u0000", "\\ufffd")
    return json.loads(text, parse_constant=str)


def json_text(value: Any) -> str:
    """``jsonable(value)`` as JSON text, in one pass unless ``value`` holds NaN or an
    infinity (which JSON text cannot carry)."""
    try:
        text = json.dumps(value, default=_default, allow_nan=False)
    except ValueError:
        return json.dumps(jsonable(value))
    return text.replace("\\u0000", "\\ufffd")


def pretty(value: Any) -> str:
    """``value`` as indented JSON text."""
    return json.dumps(value, default=_default, indent=2, ensure_ascii=False, sort_keys=True)
