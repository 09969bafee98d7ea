"""Sensitive values masked where they leave the server: the one rule of what is masked.

What counts as sensitive is set in two settings (``durable.conf``):

- ``DURABLE_REDACT_PATHS``: dotted paths into a state, ``*`` standing for any key or list
  index (``payment.card_number``, ``messages.*.additional_kwargs.api_key``). A path
  matches wherever it starts in a value, because state reaches clients at different
  depths: the state itself, an update under its node's name, the ``values`` of a
  checkpoint in an API answer. A LangChain message (a dict with ``type`` and
  ``content``) also matches the tail of a path of the form ``key.*.tail``, since a
  message stream carries a message without the list it belongs to.
- ``DURABLE_REDACT_KEYS``: key-name patterns, case-insensitive. A pattern with ``*``,
  ``?`` or ``[`` is an ``fnmatch`` pattern on the whole key; any other matches a key that
  holds it as whole words (``api_key`` matches ``openai_api_key`` and ``apiKey``,
  ``token`` matches ``access_token`` but not ``input_tokens``, so token counts stay).

A matching value, unless ``None`` or ``""``, is replaced by ``MASK`` in a copy, and
the text of an error (under ``error``, ``message``, ``error_message``) has the value
after each sensitive name masked (``redact_text``: ``password=...``); the
value given is never changed, and nor is what is stored (which is encrypted at rest when
``DURABLE_ENCRYPTION_KEY`` is set: that is independent of this). Objects (LangChain
messages, Pydantic models, dataclasses) are made JSON first, as ``durable.values``
does; other leaves (numbers, datetimes...) are kept as they are, so that an encoder
downstream writes them as it always has.

``restore`` undoes a mask that came back in a form: a field still equal to ``MASK``
takes the stored value. ``RedactingFilter`` masks log records.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import fnmatch
import functools
import logging
import re
import uuid
from typing import Any

from durable import conf
from durable.values import is_message, jsonable

MASK = "[redacted]"
_LEAVES = (
    str,
    int,
    float,
    bool,
    type(None),
    bytes,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    uuid.UUID,
    decimal.Decimal,
    enum.Enum,
)
_GLOB = re.compile(r"[*?\[]")
# Keys whose text is an exception's message (a run's or a task's error, a lifecycle
# event's): what a node put in it is masked as text (``redact_text``).
_TEXT_KEYS = frozenset({"error", "message", "error_message"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[^a-z0-9]+")


def _words(text: str) -> tuple[str, ...]:
    return tuple(w for w in _SEPARATORS.split(_CAMEL.sub("_", text).lower()) if w)


@dataclasses.dataclass(frozen=True)
class Rules:
    """The compiled settings: ``paths`` (tuples of segments), ``message_tails`` (what a
    message matches of ``key.*.tail`` paths), word ``phrases`` and ``globs``."""

    paths: tuple[tuple[str, ...], ...]
    message_tails: tuple[tuple[str, ...], ...]
    phrases: tuple[tuple[str, ...], ...]
    globs: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.paths or self.phrases or self.globs)

    def key_matches(self, key: str) -> bool:
        """Whether a key of this name is sensitive whatever its path."""
        lowered = key.lower()
        if any(fnmatch.fnmatchcase(lowered, g) for g in self.globs):
            return True
        words = _words(key)
        for phrase in self.phrases:
            n = len(phrase)
            if any(words[i : i + n] == phrase for i in range(len(words) - n + 1)):
                return True
            if n > 1 and "".join(phrase) in words:  # written as one word: APIKey, apikey
                return True
        return False


@functools.lru_cache(maxsize=16)
def _compile(paths: tuple[str, ...], keys: tuple[str, ...]) -> Rules:
    split = tuple(tuple(p.split(".")) for p in paths if p)
    tails = tuple(p[2:] for p in split if len(p) > 2 and p[1] == "*")
    globs = tuple(k.lower() for k in keys if k and _GLOB.search(k))
    phrases = tuple(_words(k) for k in keys if k and not _GLOB.search(k) and _words(k))
    return Rules(split, tails, phrases, globs)


def rules() -> Rules:
    """The rules the settings give now (read at each call, compiled once per value)."""
    return _compile(
        tuple(str(p) for p in conf.DURABLE_REDACT_PATHS),
        tuple(str(k) for k in conf.DURABLE_REDACT_KEYS),
    )


@functools.lru_cache(maxsize=4096)
def _key_matches(r: Rules, name: str) -> bool:
    # A state's keys repeat across every checkpoint of a history answer: looked up once.
    return r.key_matches(name)


def _sensitive(value: Any) -> bool:
    return value is not None and value != ""


def _walk(value: Any, partial: tuple, found: list | None, at: tuple, r: Rules) -> Any:
    if isinstance(value, _LEAVES):
        return value
    if isinstance(value, dict):
        candidates = partial + r.paths
        if r.message_tails and is_message(value):
            candidates += r.message_tails
        items = value.items()
    elif isinstance(value, (list, tuple)):
        candidates = partial + r.paths
        items = enumerate(value)
    else:
        return _walk(jsonable(value), partial, found, at, r)
    out: list[tuple[Any, Any]] = []
    for key, item in items:
        name = str(key)
        following = tuple(p[1:] for p in candidates if p[0] in ("*", name))
        if _sensitive(item) and (() in following or _key_matches(r, name)):
            if found is not None:
                found.append(at + (name,))
            out.append((key, MASK))
        elif isinstance(item, str) and name in _TEXT_KEYS:
            out.append((key, redact_text(item)))
        else:
            deeper = tuple(p for p in following if p)
            out.append((key, _walk(item, deeper, found, at + (name,), r)))
    if isinstance(value, dict):
        return dict(out)
    return [item for _, item in out]


def redact(value: Any) -> Any:
    """A copy of ``value`` with every sensitive value replaced by ``MASK``."""
    r = rules()
    if not r:
        return value
    return _walk(value, (), None, (), r)


def redact_under(key: str, value: Any) -> Any:
    """``value`` redacted as it is under state key (or channel) ``key``: a pending write
    or one state key's download, whose paths start at the state."""
    return redact({key: value})[key]


def masked_paths(value: Any) -> list[str]:
    """The dotted paths (list indices as numbers) of the values ``redact`` masks in
    ``value``, in document order."""
    r = rules()
    found: list = []
    if r:
        _walk(value, (), found, (), r)
    return [".".join(p) for p in found]


_MISSING = object()


def value_at(value: Any, path: str) -> Any:
    """The value at dotted ``path`` in ``jsonable(value)``. Raises ``KeyError`` when
    there is none."""
    node = jsonable(value)
    for part in path.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise KeyError(path)
    return node


def restore(submitted: Any, stored: Any) -> Any:
    """``submitted`` (a value edited from a redacted copy of ``stored``) with every
    part still equal to ``MASK`` replaced by the stored value at the same place, so
    that a form sending back what it showed does not write the mask."""
    if isinstance(submitted, str) and submitted == MASK and stored is not _MISSING:
        return stored
    if isinstance(submitted, dict) and isinstance(stored, dict):
        return {k: restore(v, stored.get(k, _MISSING)) for k, v in submitted.items()}
    if isinstance(submitted, list) and isinstance(stored, list):
        return [
            restore(v, stored[i] if i < len(stored) else _MISSING) for i, v in enumerate(submitted)
        ]
    return submitted


# -- text (log lines) ----------------------------------------------------------------------


@functools.lru_cache(maxsize=16)
def _text_pattern(r: Rules) -> re.Pattern | None:
    """``name: value`` / ``name=value`` / ``'name': 'value'`` for a sensitive key name
    (the key patterns' words, and the last segment of each path)."""
    names = {"[_-]?".join(map(re.escape, p)) for p in r.phrases}
    names |= {re.escape(p[-1]) for p in r.paths if p[-1] != "*"}
    if not names:
        return None
    alternatives = "|".join(sorted(names, key=len, reverse=True))
    return re.compile(
        rf"""(?ix)
        (?P<name> ["']? [\w-]*? (?:{alternatives}) [\w-]* ["']? \s* [:=] \s* )
        (?: (?P<quote>["']) .*? (?P=quote) | (?:(?:bearer|basic|token)\s+)? [^\s,;}}\])'"]+ )
        """
    )


def redact_text(text: str) -> str:
    """``text`` with the value after each sensitive name (``api_key=...``,
    ``'password': '...'``, ``Authorization: Bearer ...``) replaced by ``MASK``."""
    pattern = _text_pattern(rules())
    if pattern is None:
        return text
    return pattern.sub(lambda m: m["name"] + (m["quote"] or "") + MASK + (m["quote"] or ""), text)


def _logged(name: str | None, arg: Any) -> Any:
    """A log record's argument masked: a dict, list or tuple by ``redact``, a value
    under a sensitive name by ``MASK``; anything else as it is (its text is masked
    after formatting), so that ``%r`` of an exception reads as it always has."""
    if name is not None and _sensitive(arg) and _key_matches(rules(), str(name)):
        return MASK
    if isinstance(arg, (dict, list, tuple)):
        return redact(arg)
    return arg


class RedactingFilter(logging.Filter):
    """A handler's filter that masks a record: its arguments (``_logged``), then its
    message and traceback as text (``redact_text``). It formats the message itself, so
    the record leaves with ``args`` empty."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            args = record.args
            if isinstance(args, dict):
                args = {k: _logged(k, v) for k, v in args.items()}
            elif args:
                args = tuple(_logged(None, a) for a in args)
            message = str(record.msg) % args if args else str(record.msg)
            record.msg, record.args = redact_text(message), ()
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            if record.exc_text:
                record.exc_text = redact_text(record.exc_text)
        except Exception:  # a record that cannot be formatted is logged as it is
            pass
        return True


def install_log_filter(logger: logging.Logger) -> None:
    """Put a ``RedactingFilter`` on each of ``logger``'s handlers (once): records that
    other loggers propagate to them pass it too."""
    for handler in logger.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


__all__ = [
    "MASK",
    "Rules",
    "rules",
    "redact",
    "redact_under",
    "masked_paths",
    "value_at",
    "restore",
    "redact_text",
    "RedactingFilter",
    "install_log_filter",
]
