"""DjangoStore beside LangGraph's InMemoryStore, one concern a module; the stores and
their fixtures: ``tests.helpers.stores`` and this folder's ``conftest.py``."""
