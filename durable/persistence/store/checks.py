"""Checks on a store batch's operations before anything is read or written: a bad
namespace raises ``InvalidNamespaceError``, text no database holds (a NUL character, a
lone surrogate) ``UnstorableText`` naming its path (``namespace``, ``key``, ``value.x``,
``filter.x``, ``query``), any other bad field (a negative ``limit``, an unknown filter
operator, a non-finite number, ...) ``ValueError`` naming it."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    Op,
    PutOp,
    SearchOp,
    validate_op_namespace,
)

from durable.persistence.store.filters import OPERATORS, RANGE_OPERATORS, conditions, is_number
from durable.persistence.text import check_text

# The longest TTL an item takes, in minutes (a thousand years): an expiry must be a date
# Python and the databases hold (``datetime`` ends with the year 9999).
MAX_TTL_MINUTES = 1000 * 365 * 24 * 60


def checked(ops: Iterable[Op]) -> list[Op]:
    """``ops`` as a list, or ``ValueError`` (``InvalidNamespaceError`` for a namespace)
    naming the first bad field."""
    ops = list(ops)
    for op in ops:
        validate_op_namespace(op)
        _check_text(op)
        if isinstance(op, PutOp):
            _check_put(op)
        elif isinstance(op, SearchOp):
            _check_page(op)
            _check_filter(op.filter)
        elif isinstance(op, ListNamespacesOp):
            _check_list(op)
        elif not isinstance(op, GetOp):
            raise ValueError(f"unknown operation type: {type(op).__name__}")
    return ops


def _check_text(op: Op) -> None:
    """The texts an op stores or compares, by the names ``BaseStore``'s methods give
    them: every namespace label is ``namespace`` (the op's may begin with a prefix the
    caller never sent, so an index would mislead)."""
    if isinstance(op, ListNamespacesOp):
        labels = [label for c in op.match_conditions or () for label in c.path]
    else:
        labels = op.namespace_prefix if isinstance(op, SearchOp) else op.namespace
    for label in labels:
        check_text(label, "namespace")
    if isinstance(op, (GetOp, PutOp)):
        check_text(op.key, "key")
    if isinstance(op, PutOp):
        check_text(op.value, "value")
    if isinstance(op, SearchOp):
        check_text(op.filter, "filter")
        check_text(op.query, "query")


def _check_put(op: PutOp) -> None:
    if not op.namespace:
        raise InvalidNamespaceError("PutOp.namespace cannot be empty")
    if op.value is not None and not isinstance(op.value, Mapping):
        raise ValueError(f"PutOp.value must be a mapping or None, got {type(op.value).__name__}")
    if op.ttl is not None and not 0 < op.ttl <= MAX_TTL_MINUTES:
        raise ValueError(
            f"PutOp.ttl must be a positive number of minutes up to {MAX_TTL_MINUTES} or None, "
            f"got {op.ttl!r}"
        )


def _check_list(op: ListNamespacesOp) -> None:
    _check_page(op)
    if op.max_depth is not None and op.max_depth < 1:
        raise ValueError(f"ListNamespacesOp.max_depth must be at least 1, got {op.max_depth}")
    for condition in op.match_conditions or ():
        if condition.match_type not in ("prefix", "suffix"):
            got = condition.match_type
            raise ValueError(f"MatchCondition.match_type must be prefix or suffix, got {got!r}")


def _check_page(op: SearchOp | ListNamespacesOp) -> None:
    name = type(op).__name__
    for field in ("limit", "offset"):
        if getattr(op, field) < 0:
            raise ValueError(f"{name}.{field} must not be negative, got {getattr(op, field)}")


def _check_filter(filter: Mapping[str, Any] | None) -> None:
    for key, condition in (filter or {}).items():
        for operator, operand in conditions(condition):
            if operator not in OPERATORS:
                raise ValueError(f"SearchOp.filter[{key!r}]: unknown operator {operator!r}")
            if operator in RANGE_OPERATORS and not (is_number(operand) or isinstance(operand, str)):
                raise ValueError(
                    f"SearchOp.filter[{key!r}]: {operator} compares numbers or strings, "
                    f"got {type(operand).__name__}"
                )
            if isinstance(operand, float) and not math.isfinite(operand):
                # JSON holds no such number, and SQL could not be given one.
                raise ValueError(f"SearchOp.filter[{key!r}]: {operand!r} is not a JSON number")
