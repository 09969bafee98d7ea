"""Text that every supported database can store and compare. PostgreSQL refuses the NUL
character (U+0000) in ``text`` and ``jsonb``; a lone UTF-16 surrogate (U+D800 to U+DFFF,
which JSON's ``\\ud800`` escapes can produce) has no UTF-8 encoding, so neither
PostgreSQL nor SQLite can be sent one. ``check_text`` refuses both, in a value and in
everything it holds, keys included; whatever reaches a query or a row goes through it."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


class UnstorableText(ValueError):
    """Text no database can hold: ``field`` is the path to it (``metadata.team``,
    ``ids.0``; the path of the object for one of its keys), ``problem`` says what is
    wrong, and the message is both."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}." if field else f"{problem[0].upper()}{problem[1:]}.")
        self.field, self.problem = field, problem


def walk(value: Any, field: str = "") -> Iterator[tuple[str, Any]]:
    """``(path, item)`` for ``value`` (at ``field``) and every item it holds, in document
    order: an object's values at ``path.key``, a list's or tuple's items at ``path.0``...
    Iterative, so a value nested as deeply as JSON parsing allows cannot overflow the
    stack."""
    stack = [(field, value)]
    while stack:
        path, item = stack.pop()
        yield path, item
        if isinstance(item, Mapping):
            children = list(item.items())
        elif isinstance(item, (list, tuple)):
            children = list(enumerate(item))
        else:
            continue
        stack.extend(
            (f"{path}.{key}" if path else str(key), child) for key, child in reversed(children)
        )


def check_text(value: Any, field: str = "") -> None:
    """Refuse a NUL character or a lone surrogate in ``value``: in a string, or in any
    string or key a mapping, list or tuple holds. Raises ``UnstorableText`` naming the
    first one's path under ``field``."""
    for path, item in walk(value, field):
        if isinstance(item, str):
            if problem := text_problem(item):
                raise UnstorableText(path, problem)
        elif isinstance(item, Mapping):
            for key in item:
                if isinstance(key, str) and (problem := text_problem(key)):
                    raise UnstorableText(path, f"the key {key[:100]!r} {problem}")


def text_problem(text: str) -> str | None:
    """What keeps ``text`` out of the database, in words, or ``None``."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return "holds a NUL character (\\u0000), which the database cannot store"
    return (
        f"holds a lone UTF-16 surrogate (\\u{ord(found.group()):04x}), which is not "
        "text the database can store"
    )
