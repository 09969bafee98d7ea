"""A tenant's view of a store: every namespace it reads or writes begins with a prefix
set on the server (the tenant's slug), which the caller never sees and cannot leave.

``ScopedStore(DjangoStore(), ("acme",))`` turns ``put(("users", "1"), ...)`` into a put
at ``("acme", "users", "1")``, a search under ``("users",)`` into one under
``("acme", "users")``, and hands results back without the prefix. No operation can name
a namespace outside the prefix: the prefix is prepended to whatever the caller sends,
and the store refuses empty labels and labels with "." (``InvalidNamespaceError``), so
a caller cannot climb out of it. The operations are LangGraph's own (``GetOp``,
``PutOp``, ``SearchOp``, ``ListNamespacesOp`` in ``langgraph/store/base``).
"""

from __future__ import annotations

from collections.abc import Iterable

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from durable.persistence.store.store import DjangoStore


class ScopedStore(BaseStore):
    """``store`` seen through ``prefix`` (a tuple of namespace labels)."""

    def __init__(self, store: BaseStore, prefix: tuple[str, ...]):
        if not prefix:
            raise ValueError("A scoped store needs a non-empty prefix.")
        self.store = store
        self.prefix = tuple(prefix)
        self.supports_ttl = store.supports_ttl
        self.ttl_config = getattr(store, "ttl_config", None)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        results = self.store.batch([self._in(op) for op in ops])
        return [self._out(op, r) for op, r in zip(ops, results, strict=True)]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        results = await self.store.abatch([self._in(op) for op in ops])
        return [self._out(op, r) for op, r in zip(ops, results, strict=True)]

    def _in(self, op: Op) -> Op:
        if isinstance(op, (GetOp, PutOp)):
            return op._replace(namespace=self.prefix + tuple(op.namespace))
        if isinstance(op, SearchOp):
            return op._replace(namespace_prefix=self.prefix + tuple(op.namespace_prefix))
        if isinstance(op, ListNamespacesOp):
            conditions = [
                MatchCondition(c.match_type, self.prefix + tuple(c.path))
                if c.match_type == "prefix"
                else c
                for c in op.match_conditions or ()
            ]
            if not any(c.match_type == "prefix" for c in conditions):
                conditions.append(MatchCondition("prefix", self.prefix))
            depth = None if op.max_depth is None else op.max_depth + len(self.prefix)
            return op._replace(match_conditions=tuple(conditions), max_depth=depth)
        raise ValueError(f"Unknown store operation: {type(op).__name__}")

    def _out(self, op: Op, result: Result) -> Result:
        if isinstance(op, GetOp):
            return self._item(result) if result is not None else None
        if isinstance(op, SearchOp):
            return [self._item(item) for item in result]
        if isinstance(op, ListNamespacesOp):
            return [self._strip(ns) for ns in result]
        return result

    def _strip(self, namespace: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(namespace[len(self.prefix) :])

    def _item(self, item: Item) -> Item:
        fields = {
            "value": item.value,
            "key": item.key,
            "namespace": self._strip(item.namespace),
            "created_at": item.created_at,
            "updated_at": item.updated_at,
        }
        if isinstance(item, SearchItem):
            return SearchItem(**fields, score=item.score)
        return Item(**fields)


def tenant_store(tenant) -> ScopedStore:
    """``tenant``'s part of the store (a ``durable.models.Tenant``): every namespace under
    its slug, for the console's store browser and the API's store routes alike."""
    return ScopedStore(DjangoStore(), (tenant.slug,))
