"""The run engine: what the console and the API call.

Requests (``durable.engine.operations``; a run's, ``submit`` of a ``RunRequest`` and its
keyword forms, in ``durable.engine.runs``): ``create_thread``, ``update_thread_metadata``,
``start``, ``resume``, ``fork``, ``close``, ``replay``, ``answer_again``, ``cancel``,
``delete_thread``; on whole threads and runs beyond that (``durable.engine.threads``):
``copy_thread``, ``prune_threads``, ``patch_checkpoint_metadata``, ``delete_run``,
``cancel_with_rollback``, ``runs_to_cancel``, ``set_on_completion``, ``end_stateless``;
schedules that start runs (``durable.engine.crons``): ``create_cron``, ``update_cron``,
``delete_cron``, and ``fire`` (one slot's run, which Celery beat wakes up).
State reads (``durable.engine.state``): ``thread_state``, ``state_at``,
``thread_history``, ``pending_interrupts``, ``pending_writes``, ``graph_drawing``,
``graph_shape``, ``config_for``; where a replayed or forked branch first did something
else than the branch it left (``durable.engine.divergence``): ``divergence``,
``run_divergence``; a registered graph's drawing and schemas, as
assistants show them (``durable.engine.assistants``): ``graph_json``, ``graph_schemas``,
``input_schema``, ``subgraph_schemas``; stored assistants (``durable.engine.assistant_configs``):
``resolve_assistant`` (what a run on an assistant runs, with which config and context:
the one rule every surface that starts runs calls), ``find_assistant``,
``create_assistant``, ``update_assistant``, ``set_latest_version``,
``delete_assistant``; what an update would run next, written nowhere
(``durable.engine.update``): ``next_after_update``, and the whole fork as it would turn
out (its state after reducers, its next tasks): ``preview_fork``; what each state key
takes, as JSON schemas: ``state_schema``. A thread's ``active_run``
(``durable.engine.policy``). Schema drift (``durable.engine.drift``): ``thread_drift``
(how a thread's newest checkpoint no longer fits the deployed graph, or ``None``),
``drifted_threads``, ``migration`` (the fork that fits it again), ``check_fits``; and
``deployed_version`` (``durable.engine.versions``: a graph's structure as deployed).
How a thread stands, with its next action (``durable.engine.diagnosis``): ``diagnose``,
``filter_threads``, ``DIAGNOSES``.
One masked value of a checkpoint, audited (``durable.engine.reveal``): ``reveal``.
Refusals raise ``InvalidRequest`` (``durable.engine.checks``).

Below them, the engine's own modules: ``policy`` (queueing rules, no broker), ``queue``
(the broker), ``records`` (a run's claim, events and outcome), ``execution``, ``buffer``
and ``lease`` (a run in a worker), ``recovery`` (the reaper, drain and hand-back),
``tasks`` (Celery tasks and worker signals), ``follow`` (following a run's events) and
``operations_stats`` (what the console's Operations page counts).
"""

from durable.engine.assistant_configs import (
    RunAssistant,
    UnknownAssistant,
    create_assistant,
    delete_assistant,
    find_assistant,
    merged_config,
    resolve_assistant,
    set_latest_version,
    update_assistant,
)
from durable.engine.assistants import graph_json, graph_schemas, input_schema, subgraph_schemas
from durable.engine.checks import InvalidRequest, check_storable
from durable.engine.crons import create_cron, delete_cron, fire, update_cron
from durable.engine.divergence import Divergence, divergence, run_divergence
from durable.engine.drift import (
    Drift,
    Finding,
    Migration,
    check_fits,
    drifted_threads,
    migration,
    thread_drift,
)
from durable.engine.operations import (
    ForkResult,
    cancel,
    close,
    create_thread,
    delete_thread,
    fork,
    update_thread_metadata,
)
from durable.engine.policy import active_run
from durable.engine.requests import Resume, RunRequest
from durable.engine.reveal import reveal
from durable.engine.runs import answer_again, replay, resume, start, submit
from durable.engine.state import (
    GraphShape,
    config_for,
    graph_drawing,
    graph_shape,
    pending_interrupts,
    pending_writes,
    state_at,
    thread_history,
    thread_state,
)
from durable.engine.threads import (
    cancel_with_rollback,
    copy_thread,
    delete_run,
    end_stateless,
    patch_checkpoint_metadata,
    prune_threads,
    runs_to_cancel,
    set_on_completion,
)
from durable.engine.update import (
    NOTHING_NEXT,
    ForkPreview,
    next_after_update,
    preview_fork,
    state_schema,
)
from durable.engine.versions import deployed_version

__all__ = [
    "InvalidRequest",
    "RunAssistant",
    "UnknownAssistant",
    "resolve_assistant",
    "merged_config",
    "find_assistant",
    "create_assistant",
    "update_assistant",
    "set_latest_version",
    "delete_assistant",
    "ForkResult",
    "check_storable",
    "create_thread",
    "update_thread_metadata",
    "RunRequest",
    "Resume",
    "submit",
    "start",
    "resume",
    "fork",
    "close",
    "replay",
    "answer_again",
    "cancel",
    "delete_thread",
    "create_cron",
    "update_cron",
    "delete_cron",
    "fire",
    "active_run",
    "reveal",
    "config_for",
    "thread_state",
    "state_at",
    "pending_writes",
    "graph_drawing",
    "thread_history",
    "pending_interrupts",
    "GraphShape",
    "graph_shape",
    "next_after_update",
    "ForkPreview",
    "preview_fork",
    "state_schema",
    "NOTHING_NEXT",
    "graph_json",
    "graph_schemas",
    "input_schema",
    "subgraph_schemas",
    "copy_thread",
    "prune_threads",
    "patch_checkpoint_metadata",
    "delete_run",
    "cancel_with_rollback",
    "runs_to_cancel",
    "set_on_completion",
    "end_stateless",
    "Drift",
    "Finding",
    "Migration",
    "thread_drift",
    "drifted_threads",
    "migration",
    "check_fits",
    "deployed_version",
    "Divergence",
    "divergence",
    "run_divergence",
]
