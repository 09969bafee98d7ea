"""LangGraph's long-term memory store on Django's ORM: ``DjangoStore``, and
``ScopedStore``, which keeps one tenant's namespaces under its prefix."""

from durable.persistence.store.scoped import ScopedStore, tenant_store
from durable.persistence.store.store import DjangoStore

__all__ = ["DjangoStore", "ScopedStore", "tenant_store"]
