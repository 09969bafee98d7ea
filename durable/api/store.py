"""``/store``: the Agent Server's key-value store, scoped to the token's tenant. Every
namespace begins with the tenant's slug, added on the way in and stripped on the way
out (``durable.persistence.store.tenant_store``), so a client never sees it."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router

from durable import engine
from durable.api import answers, shapes
from durable.api.authentication import may_change
from durable.api.errors import ApiError
from durable.api.schemas import StoreDelete, StoreGet, StoreNamespaces, StorePut, StoreSearch
from durable.persistence.store import ScopedStore, tenant_store
from durable.persistence.text import UnstorableText

store = Router(tags=["store"])


def _store(request: HttpRequest) -> ScopedStore:
    """The token's tenant's part of the store."""
    return tenant_store(request.auth.tenant)


def _store_call(call):
    """The store's refusals (a bad namespace, filter or TTL) as 422s naming no single
    field, since the store's messages name it; text it cannot hold names its path."""
    try:
        return call()
    except UnstorableText as exc:
        raise ApiError(422, str(exc), exc.field) from None
    except ValueError as exc:
        raise ApiError(422, str(exc), "namespace" if "amespace" in str(exc) else None) from None


@store.put("/items", summary="Put an item", response={204: None})
def put_item(request, body: StorePut):
    may_change(request)
    engine.check_storable(body.value, "value")
    _store_call(
        lambda: _store(request).put(
            tuple(body.namespace), body.key, body.value, index=body.index, ttl=body.ttl
        )
    )
    return 204, None


@store.get(
    "/items",
    summary="Get an item",
    response=answers.Item | None,
)
def get_item(request, query: Query[StoreGet]):
    """The item at ``namespace`` (labels joined by ``.``) and ``key``; ``null`` when
    there is none, as the Agent Server answers (the JS SDK types ``getItem`` as
    ``Item | null``)."""
    namespace = tuple(label for label in query.namespace.split(".") if label)
    item = _store_call(
        lambda: _store(request).get(namespace, query.key, refresh_ttl=query.refresh_ttl)
    )
    return None if item is None else shapes.item_json(item)


@store.delete("/items", summary="Delete an item", response={204: None})
def delete_item(request, body: StoreDelete):
    may_change(request)
    _store_call(lambda: _store(request).delete(tuple(body.namespace), body.key))
    return 204, None


@store.post("/items/search", summary="Search items", response=answers.SearchItemsResponse)
def search_items(request, body: StoreSearch = None):
    body = body or StoreSearch()
    found = _store_call(
        lambda: _store(request).search(
            tuple(body.namespace_prefix),
            query=body.query,
            filter=body.filter,
            limit=body.limit,
            offset=body.offset,
            refresh_ttl=body.refresh_ttl,
        )
    )
    return {"items": [shapes.item_json(i) for i in found]}


@store.post("/namespaces", summary="List namespaces", response=answers.ListNamespaceResponse)
def list_namespaces(request, body: StoreNamespaces = None):
    body = body or StoreNamespaces()
    found = _store_call(
        lambda: _store(request).list_namespaces(
            prefix=tuple(body.prefix) if body.prefix else None,
            suffix=tuple(body.suffix) if body.suffix else None,
            max_depth=body.max_depth,
            limit=body.limit,
            offset=body.offset,
        )
    )
    return {"namespaces": [list(ns) for ns in found]}
