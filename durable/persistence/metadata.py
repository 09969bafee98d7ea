"""Filtering checkpoints by metadata, the same way on SQLite and PostgreSQL.

``list(filter={key: value})`` keeps a checkpoint when, for every key, its metadata holds
that key with an equal value: InMemorySaver's rule (``langgraph/checkpoint/memory``) and
what LangGraph's conformance suite checks. PostgresSaver's ``metadata @> filter`` also
matches a *part* of a nested object or list; we do not, on either database, so a filter
means the same thing everywhere.

Keys are taken literally (``"0"``, ``"a.b"``, ``'say "hi"'``), which Django's ``KeyTransform``
does not do: it reads integer-like keys as array indexes. Numbers compare as numbers
(``1 == 1.0``). Nested objects and lists compare structurally on PostgreSQL (jsonb) and as
canonical JSON text on SQLite, which is why metadata is stored with sorted keys.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import BooleanField, F, Func


class SortedKeysJSONEncoder(DjangoJSONEncoder):
    """Django's JSON encoder, writing object keys in sorted order."""

    def __init__(self, *args, **kwargs):
        kwargs["sort_keys"] = True
        super().__init__(*args, **kwargs)


def canonical(value: Any) -> str:
    return json.dumps(value, cls=SortedKeysJSONEncoder, separators=(",", ":"))


class MetadataKeyEquals(Func):
    """``metadata[key] == value`` as a filter expression over a JSON column."""

    conditional = True
    output_field = BooleanField()

    def __init__(self, key: str, value: Any, column: str = "metadata"):
        super().__init__(F(column))
        self.key = str(key)
        self.value = value

    def as_sql(self, compiler, connection, **extra):
        column, params = compiler.compile(self.source_expressions[0])
        if params:
            raise NotImplementedError("MetadataKeyEquals reads a column, not an expression")
        return key_equals_sql(connection.vendor, column, self.key, self.value)


def key_equals_sql(vendor: str, column: str, key: str, value: Any) -> tuple[str, tuple]:
    """``(sql, params)``: a condition true when the JSON object in ``column`` (SQL text,
    a column reference) holds ``key`` with a value equal to ``value``, by the rule in
    this module's docstring. ``vendor`` is ``"postgresql"`` or ``"sqlite"``; another
    raises ``NotImplementedError``."""
    if vendor == "postgresql":
        # No ::jsonb: the operator types the parameter, where a cast would be run on
        # every row under a server-side prepared statement's generic plan.
        return f"(({column}) -> %s) = %s", (key, canonical(value))
    if vendor == "sqlite":
        test, test_params = _sqlite_test(value)
        sql = f"EXISTS (SELECT 1 FROM json_each({column}) AS m WHERE m.key = %s AND {test})"
        return sql, (key, *test_params)
    raise NotImplementedError(f"metadata filters are not written for {vendor}")


def _sqlite_test(value: Any) -> tuple[str, tuple]:
    """SQL testing ``json_each``'s (type, value) of one key against ``value``."""
    if value is None:
        return "m.type = 'null'", ()
    if isinstance(value, bool):
        return ("m.type = 'true'" if value else "m.type = 'false'"), ()
    if isinstance(value, (int, float)):
        return "m.type IN ('integer', 'real') AND m.value = %s", (value,)
    if isinstance(value, str):
        return "m.type = 'text' AND m.value = %s", (value,)
    return "m.type IN ('object', 'array') AND json(m.value) = json(%s)", (canonical(value),)


class IndexedMetadataKeyEquals(MetadataKeyEquals):
    """``MetadataKeyEquals`` that a GIN index on the column can serve on PostgreSQL:
    ``column @> {key: value}`` finds the candidates through the index, and the key
    equality keeps this module's rule (containment alone would also match a part of a
    nested value). Elsewhere the same as ``MetadataKeyEquals``."""

    def as_sql(self, compiler, connection, **extra):
        sql, params = super().as_sql(compiler, connection, **extra)
        if connection.vendor != "postgresql":
            return sql, params
        column, _ = compiler.compile(self.source_expressions[0])
        return f"({column} @> %s AND {sql})", (canonical({self.key: self.value}), *params)
