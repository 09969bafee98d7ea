"""LangGraph's checkpointer on Django's ORM tables: ``DjangoSaver``, with the shapes its
pruning API returns (``Counts``, ``PrunePlan``)."""

from durable.persistence.checkpoint.saver import Counts, DjangoSaver, PrunePlan, check_thread_id

__all__ = ["Counts", "DjangoSaver", "PrunePlan", "check_thread_id"]
