"""LangGraph's checkpointer on Django's ORM tables: ``DjangoSaver``."""

from durable.persistence.checkpoint.saver import DjangoSaver, check_thread_id

__all__ = ["DjangoSaver", "check_thread_id"]
