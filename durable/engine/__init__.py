"""The run engine: the operations the console and the API call (start, resume, fork,
replay, answer_again, cancel, delete_thread, state reads), and below them the rules of
queueing, the run records, execution in workers, leases and recovery.

Surfaces import from here; the modules inside are the engine's own.
"""

from durable.engine.operations import (
    ForkResult,
    GraphShape,
    InvalidRequest,
    answer_again,
    cancel,
    check_storable,
    config_for,
    create_thread,
    delete_thread,
    fork,
    graph_drawing,
    graph_shape,
    pending_interrupts,
    pending_writes,
    replay,
    resume,
    start,
    state_at,
    thread_history,
    thread_state,
    update_thread_metadata,
)

__all__ = [
    "InvalidRequest",
    "ForkResult",
    "check_storable",
    "create_thread",
    "update_thread_metadata",
    "start",
    "resume",
    "fork",
    "replay",
    "answer_again",
    "cancel",
    "delete_thread",
    "config_for",
    "thread_state",
    "state_at",
    "pending_writes",
    "graph_drawing",
    "thread_history",
    "pending_interrupts",
    "GraphShape",
    "graph_shape",
]
