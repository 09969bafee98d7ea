"""In-process metrics: what a process measures as it happens (latencies, sizes, streams
open now), kept by ``prometheus_client`` in the process's default registry, or, when
``PROMETHEUS_MULTIPROC_DIR`` is set before the first import of ``prometheus_client``, in
that directory's files, which every process of the machine writes and the web process
reads (``durable.metrics.exposition``).

This module imports nothing of the project, so the persistence layer and the engine may
record into it, through the metrics' own helpers (a histogram's ``labels(...).time()``,
a gauge's ``track_inprogress()``), which never raise.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

# Seconds: one database write or store operation, from a millisecond to ten seconds.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)
# Bytes of one save: from 100 B to 10 MB.
SIZE_BUCKETS = (100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000)

CHECKPOINT_SAVE_SECONDS = Histogram(
    "durable_checkpoint_save_seconds",
    "Latency of one checkpoint saved (put) or one task's pending writes saved (put_writes).",
    ["operation"],
    buckets=LATENCY_BUCKETS,
)
CHECKPOINT_SAVE_BYTES = Histogram(
    "durable_checkpoint_save_bytes",
    "Serialized bytes one put (the checkpoint and its new channel blobs) or put_writes"
    " (its writes) stored.",
    ["operation"],
    buckets=SIZE_BUCKETS,
)
STORE_OPERATION_SECONDS = Histogram(
    "durable_store_operation_seconds",
    "Latency of one batch of store operations (get, search, put, list namespaces).",
    ["operation"],
    buckets=LATENCY_BUCKETS,
)
# livesum: the streams of processes that exited are not counted.
EVENT_STREAMS_OPEN = Gauge(
    "durable_event_streams_open",
    "Server-sent event streams open now (API run streams and console run pages).",
    multiprocess_mode="livesum",
)
REAPER_REDISPATCHED = Counter(
    "durable_reaper_redispatched",
    "Pending runs whose message was not on its way, sent again by a reaper.",
)
REAPER_RECOVERED = Counter(
    "durable_reaper_recovered",
    "Running runs whose lease expired, settled by a reaper (requeued or ended).",
)
RETENTION_SWEEPS = Counter(
    "durable_retention_sweeps", "Scheduled retention sweeps completed.", ["outcome"]
)
