"""The text ``GET /metrics`` serves: the database collector's series and the in-process
ones (this process's, or every process's of the machine in multiprocess mode)."""

from __future__ import annotations

import os

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.multiprocess import MultiProcessCollector

from durable.metrics import process  # noqa: F401  (registers the in-process metrics)
from durable.metrics.database import DatabaseCollector

CONTENT_TYPE = CONTENT_TYPE_LATEST


def multiprocess_dir() -> str | None:
    """The directory of ``prometheus_client``'s multiprocess mode, if it is on."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or os.environ.get("prometheus_multiproc_dir")


def registry() -> CollectorRegistry:
    """A fresh registry for one scrape: the database collector and ``in_process()``."""
    scrape = CollectorRegistry(auto_describe=False)
    scrape.register(DatabaseCollector())
    scrape.register(in_process())
    return scrape


def in_process():
    """The collector of the in-process series: in multiprocess mode, the files of every
    process of the machine; else this process's default registry (its own series, and
    the Python process and GC collectors)."""
    directory = multiprocess_dir()
    if directory:
        # Registered with a throwaway registry: only its ``collect`` is wanted here.
        return MultiProcessCollector(CollectorRegistry(), path=directory)
    return _Default()


class _Default:
    """The process's default registry, as one collector."""

    def describe(self):
        return []

    def collect(self):
        return REGISTRY.collect()


def render() -> bytes:
    """The Prometheus text exposition of one scrape."""
    return generate_latest(registry())
