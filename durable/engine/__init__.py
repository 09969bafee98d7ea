"""The run engine: what starts, runs and ends runs, and the state reads they need. The
console and the API call the names imported here; each module's docstring says what it
holds (``requests``: the ``RunRequest`` every surface builds; ``runs``: ``submit`` of one and its
keyword forms (``start``, ``resume``, ``replay``, ``answer_again``); ``operations``: the other
requests on threads and runs; ``threads``: whole threads and
runs beyond them; ``crons``; ``state``: state reads; ``stored_assistants`` and
``graph_schemas``: stored assistants, and a registered graph's drawing and schemas;
``update``: what a fork would do; ``fit``: whether a checkpoint fits the deployed graph;
``checks``: refusals, ``InvalidRequest``). Below them, the engine's own modules (policy,
queue, records, execution, lease, recovery, tasks, follow) are imported by name.
What only reads and explains is in ``durable.reports``.
"""

from durable.engine.checks import InvalidRequest, check_storable
from durable.engine.crons import create_cron, delete_cron, fire, update_cron
from durable.engine.fit import Drift, Finding, check_fits, thread_drift
from durable.engine.graph_schemas import graph_json, graph_schemas, input_schema, subgraph_schemas
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
from durable.engine.stored_assistants import (
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
