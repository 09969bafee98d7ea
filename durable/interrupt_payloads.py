"""Interrupt payload kinds: what a pending interrupt's value asks, decided once for the
console's pages and answer form (``dashboard.present.interrupts``), the audit of an
answer (``durable.audit.answered``) and the inbox's SQL (``action_name``, which
``durable.reports.waiting`` annotates threads with).

- ``HITL``: LangChain v1 ``HITLRequest``, ``{"action_requests": [{name, args,
  description?}], "review_configs": [{action_name, allowed_decisions, args_schema?}]}``
  (both lists), resumed with ``{"decisions": [one decision per action, in order]}``.
- ``HUMAN``: agent-inbox ``HumanInterrupt``, ``{"action_request": {action, args},
  "config": {allow_accept, allow_edit, allow_respond, allow_ignore}, "description"}``
  (both objects), passed to ``interrupt()`` alone or, as agent-inbox asks, as a list of
  exactly one; resumed with a list of one ``HumanResponse`` ``{"type", "args"}``.
- ``GENERIC``: anything else, answered with a JSON value.

Each kind is one ``Kind`` row (``KINDS``): the keys its payload has with their JSON
types, and where its first action's name is. ``kind_of`` reads a Python value by those
rows; ``action_name`` builds the SQL from the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Case, CharField, Expression, F, Q, TextField, When
from django.db.models.fields.json import KT, KeyTransform, compile_json_path
from django.db.models.lookups import Exact, IsNull

HITL = "hitl"
HUMAN = "human"
GENERIC = "generic"

# The JSON types a kind's keys hold, by the names SQLite's ``json_type`` and PostgreSQL's
# ``jsonb_typeof`` both give them.
PYTHON_TYPES = {"array": list, "object": dict}


@dataclass(frozen=True)
class Kind:
    """One payload kind: ``keys`` the payload's keys with the JSON type each holds,
    ``action`` the path below the payload to its first action's name, ``listed`` whether
    the payload may come as a list of exactly one."""

    name: str
    keys: tuple[tuple[str, str], ...]
    action: tuple[str, ...]
    listed: bool = False


KINDS = (
    Kind(
        HITL,
        (("action_requests", "array"), ("review_configs", "array")),
        ("action_requests", "0", "name"),
    ),
    Kind(
        HUMAN,
        (("action_request", "object"), ("config", "object")),
        ("action_request", "action"),
        True,
    ),
)


def _fits(kind: Kind, value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(value.get(key), PYTHON_TYPES[json_type]) for key, json_type in kind.keys
    )


def _payload(value: Any) -> tuple[Kind | None, Any]:
    """The kind of ``value`` and the payload itself (a listed one taken out of its list)."""
    for kind in KINDS:
        candidate = (
            value[0] if kind.listed and isinstance(value, list) and len(value) == 1 else value
        )
        if _fits(kind, candidate):
            return kind, candidate
    return None, value


def kind_of(value: Any) -> str:
    """``HITL``, ``HUMAN`` or ``GENERIC``: the kind of interrupt value ``value``."""
    kind, _ = _payload(value)
    return kind.name if kind else GENERIC


def human_payload(value: Any) -> dict | None:
    """The ``HumanInterrupt`` in ``value`` (alone or the one of a list of one), or
    ``None`` when ``value`` is of another kind."""
    kind, payload = _payload(value)
    return payload if kind is not None and kind.name == HUMAN else None


def action_names(value: Any) -> list[str | None]:
    """The names of the actions ``value`` asks about, in order: each action request's
    ``name`` of a ``HITLRequest`` (``None`` where it has none), the one ``action`` of a
    ``HumanInterrupt``; ``[]`` for a generic payload."""
    kind, payload = _payload(value)
    if kind is None:
        return []
    if kind.name == HITL:
        return [r.get("name") for r in payload["action_requests"] if isinstance(r, dict)]
    return [payload["action_request"].get("action")]


# -- the same rule in SQL -----------------------------------------------------------------


class _JSONType(KeyTransform):
    """The JSON type of the value at a key path (``array``, ``object``, ...; ``NULL`` where
    there is none), on SQLite and PostgreSQL."""

    output_field = CharField()

    def as_sqlite(self, compiler, connection):
        lhs, params, keys = self.preprocess_lhs(compiler, connection)
        return f"JSON_TYPE({lhs}, %s)", (*params, compile_json_path(keys))

    def as_postgresql(self, compiler, connection):
        sql, params = super().as_postgresql(compiler, connection)
        return f"JSONB_TYPEOF({sql})", params


def _json_type(path: str) -> _JSONType:
    column, *keys = path.split("__")
    expression = F(column)
    for key in keys[:-1]:
        expression = KeyTransform(key, expression)
    return _JSONType(keys[-1], expression)


def _fits_sql(kind: Kind, path: str) -> Q:
    return Q(*(Exact(_json_type(f"{path}__{key}"), json_type) for key, json_type in kind.keys))


def action_name(path: str) -> Expression:
    """The first action's name (text) of the interrupt value at JSON key path ``path``
    (``"interrupts__0__value"``: a run's first interrupt), by the rule of ``kind_of`` and
    ``action_names``; ``NULL`` for a generic payload or an action with no name."""
    whens = []
    for kind in KINDS:
        name = "__".join(kind.action)
        whens.append(When(_fits_sql(kind, path), then=KT(f"{path}__{name}")))
        if kind.listed:
            one = Q(Exact(_json_type(path), "array"), IsNull(_json_type(f"{path}__1"), True))
            whens.append(When(one & _fits_sql(kind, f"{path}__0"), then=KT(f"{path}__0__{name}")))
    return Case(*whens, default=None, output_field=TextField())
