"""Store filter compilation: a search's ``filter`` (``{key: value}`` or ``{key: {"$eq" |
"$ne" | "$gt" | "$gte" | "$lt" | "$lte": operand}}``) as SQL on the JSON ``value`` column
for PostgreSQL and SQLite, and as Python (``matches``) for encrypted values; also the
namespace prefix and ``ListNamespacesOp`` match conditions. The SQL and the Python
forms answer alike."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from django.db.models import BooleanField, F, Func, Q
from langgraph.store.base import MatchCondition

from durable.persistence.metadata import canonical, key_equals_sql

RANGE_OPERATORS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
OPERATORS = {"$eq", "$ne", *RANGE_OPERATORS}


def conditions(condition: Any) -> list[tuple[str, Any]]:
    """(operator, operand) pairs of one filter entry: an operator dict (a key starting
    with ``$``, as ``InMemoryStore`` reads it) or a value meaning ``$eq``."""
    if isinstance(condition, Mapping) and any(str(k).startswith("$") for k in condition):
        return list(condition.items())
    return [("$eq", condition)]


def matches(value: Mapping[str, Any], filter: Mapping[str, Any]) -> bool:
    """Whether ``value`` passes ``filter``: the Python form of the SQL filter.

    Keys are top-level and literal. ``$eq`` (or a bare value) is JSON equality: numbers by
    value (``1 == 1.0``), booleans apart from numbers, objects and lists structurally.
    ``$ne`` is its negation, so an item without the key passes (as in ``InMemoryStore``).
    ``$gt $gte $lt $lte`` compare a number operand with numbers and a string operand with
    strings (by code point); any other stored type, or a missing key, fails.
    """
    return all(
        _passes(value, str(key), operator, operand)
        for key, condition in filter.items()
        for operator, operand in conditions(condition)
    )


def _passes(value: Mapping[str, Any], key: str, operator: str, operand: Any) -> bool:
    present = key in value
    if operator == "$eq":
        return present and _json_equal(value[key], operand)
    if operator == "$ne":
        return not (present and _json_equal(value[key], operand))
    if not present:
        return False
    stored = value[key]
    if not (is_number(stored) and is_number(operand)) and not (
        isinstance(stored, str) and isinstance(operand, str)
    ):
        return False
    return {
        "$gt": stored > operand,
        "$gte": stored >= operand,
        "$lt": stored < operand,
        "$lte": stored <= operand,
    }[operator]


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(map(_json_equal, a, b))
    return a == b


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def sql_filter(filter: Mapping[str, Any]) -> list[Q]:
    """``matches`` as conditions on the JSON ``value`` column, for a QuerySet."""
    return [Q(ValueFilter(filter))]


class ValueFilter(Func):
    """``filter_sql`` as a QuerySet condition on the ``value`` column."""

    conditional = True
    output_field = BooleanField()

    def __init__(self, filter: Mapping[str, Any]):
        super().__init__(F("value"))
        self.filter = filter

    def as_sql(self, compiler, connection, **extra):
        column, params = compiler.compile(self.source_expressions[0])
        if params:
            raise NotImplementedError("ValueFilter reads a column, not an expression")
        return filter_sql(connection.vendor, column, self.filter)


def filter_sql(vendor: str, column: str, filter: Mapping[str, Any]) -> tuple[str, list]:
    """``(sql, params)``: ``matches(<column>, filter)`` as one SQL condition on a JSON
    column (``column`` is SQL text, a column reference), for ``vendor``
    ``"postgresql"`` or ``"sqlite"`` (another raises ``NotImplementedError``).

    On PostgreSQL the scalar ``$eq`` conditions are one jsonb containment (``@>``; a
    list or object operand is compared whole instead, as containment would also match a
    part) and the range conditions one strict jsonpath (``@@``), whose comparisons are
    false across types: numbers compare as numbers, strings by code point. Parameters
    are left untyped for the operators to type: a cast would run on every row under a
    prepared statement's generic plan (``sql.cursor`` prepares after five runs)."""
    if vendor == "postgresql":
        parts = _postgresql_filter(column, filter)
    elif vendor == "sqlite":
        parts = _sqlite_filter(column, filter)
    else:
        raise NotImplementedError(f"store filters are not written for {vendor}")
    return " AND ".join(sql for sql, _ in parts), [p for _, params in parts for p in params]


def _postgresql_filter(column: str, filter: Mapping[str, Any]) -> list[tuple[str, Sequence]]:
    contained: dict[str, Any] = {}
    ranges: list[str] = []
    parts: list[tuple[str, Sequence]] = []
    for key, operator, operand in _flat(filter):
        if operator == "$eq" and not isinstance(operand, Mapping | list | tuple):
            contained[key] = operand
        elif operator == "$eq":
            parts.append(key_equals_sql("postgresql", column, key, operand))
        elif operator == "$ne":
            parts.append((f"({column} -> %s) IS DISTINCT FROM %s", (key, canonical(operand))))
        else:
            ranges.append(f"$.{_json(key)} {RANGE_OPERATORS[operator]} {_json(operand)}")
    if contained:
        parts.insert(0, (f"{column} @> %s", (canonical(contained),)))
    if ranges:
        parts.append((f"{column} @@ %s", ("strict " + " && ".join(ranges),)))
    return parts


def _sqlite_filter(column: str, filter: Mapping[str, Any]) -> list[tuple[str, Sequence]]:
    parts: list[tuple[str, Sequence]] = []
    for key, operator, operand in _flat(filter):
        if operator in ("$eq", "$ne"):
            sql, params = key_equals_sql("sqlite", column, key, operand)
            parts.append((sql if operator == "$eq" else f"NOT {sql}", params))
        else:
            types = "'integer', 'real'" if is_number(operand) else "'text'"
            sql = (
                f"EXISTS (SELECT 1 FROM json_each({column}) AS m WHERE m.key = %s"
                f" AND m.type IN ({types}) AND m.value {RANGE_OPERATORS[operator]} %s)"
            )
            parts.append((sql, (key, operand)))
    return parts


def _flat(filter: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
    """(key, operator, operand) of every condition of ``filter``."""
    return [
        (str(key), operator, operand)
        for key, condition in filter.items()
        for operator, operand in conditions(condition)
    ]


def _json(value: Any) -> str:
    """``value`` as a JSON literal, which is also a jsonpath literal (strings quoted and
    escaped, numbers finite)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def prefix_sql(vendor: str, column: str, text: str) -> tuple[str, list]:
    """``(sql, params)``: the namespace in ``column`` (SQL text, a column reference) is
    ``text`` or below it, label by label, in code-point order. On PostgreSQL,
    ``<column> || '.'`` starts with ``text.``: one range of the index migration 0007
    adds (text_pattern_ops operators, so any collation), also in a generic plan. On
    SQLite, equal or in [``text.``, ``text/``): a range of the unique index."""
    if vendor == "postgresql":
        dotted = f"({column} || '.')"
        return f"({dotted} ~>=~ %s AND {dotted} ~<~ %s)", [text + ".", text + "/"]
    return f"({column} = %s OR ({column} >= %s AND {column} < %s))", [
        text,
        text + ".",
        text + "/",
    ]


class NamespacePrefix(Func):
    """``prefix_sql`` as a QuerySet condition on the ``namespace`` column."""

    conditional = True
    output_field = BooleanField()

    def __init__(self, text: str):
        super().__init__(F("namespace"))
        self.text = text

    def as_sql(self, compiler, connection, **extra):
        column, params = compiler.compile(self.source_expressions[0])
        if params:
            raise NotImplementedError("NamespacePrefix reads a column, not an expression")
        return prefix_sql(connection.vendor, column, self.text)


def match_pattern(condition: MatchCondition) -> str:
    """A regular expression (valid for Python and PostgreSQL) matching whole labels, ``*``
    being any one label: PostgresStore's ``_namespace_match_pattern``."""
    body = r"\.".join("[^.]+" if label == "*" else re.escape(label) for label in condition.path)
    if condition.match_type == "suffix":
        return rf"(^|\.){body}\Z"
    return rf"^{body}(\.|\Z)"
