"""A thin async facade over DjangoSaver's *sync* methods.

LangGraph's conformance suite only calls the async methods. Running it through this
facade makes it exercise the sync path (``put``, ``put_writes``, ``get_tuple``, ``list``,
``delete_thread``, ``delete_for_runs``, ``copy_thread``, ``prune``) instead, each called
in a worker thread as LangGraph's own sync executor would.
"""

import asyncio

from langgraph.checkpoint.base import BaseCheckpointSaver

from durable.persistence.checkpoint import DjangoSaver


class SyncPathFacade(BaseCheckpointSaver):
    def __init__(self, inner: DjangoSaver):
        super().__init__(serde=inner.serde)
        self.inner = inner

    def get_next_version(self, current, channel=None):
        return self.inner.get_next_version(current, channel)

    async def aput(self, config, checkpoint, metadata, new_versions):
        return await asyncio.to_thread(self.inner.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config, writes, task_id, task_path=""):
        return await asyncio.to_thread(self.inner.put_writes, config, writes, task_id, task_path)

    async def aget_tuple(self, config):
        return await asyncio.to_thread(self.inner.get_tuple, config)

    async def alist(self, config, *, filter=None, before=None, limit=None):
        items = await asyncio.to_thread(
            lambda: list(self.inner.list(config, filter=filter, before=before, limit=limit))
        )
        for item in items:
            yield item

    async def adelete_thread(self, thread_id):
        return await asyncio.to_thread(self.inner.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids):
        return await asyncio.to_thread(self.inner.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id, target_thread_id):
        return await asyncio.to_thread(self.inner.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids, *, strategy="keep_latest"):
        return await asyncio.to_thread(self.inner.prune, thread_ids, strategy=strategy)
