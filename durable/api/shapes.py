"""What the API answers, as the Agent Server's JSON: a thread, a run, a state (with its
checkpoints, tasks and interrupts), an assistant and a store item. A state and its parts
are shaped in ``durable.snapshots``, which the console's checkpoint download shares;
they are named here too, as the routers use them.

Values pass through ``durable.values.jsonable``: whatever the graph's state holds comes
out JSON-safe, the checkpoint itself untouched."""

from __future__ import annotations

from django.utils import timezone

from durable import engine
from durable.api import answers
from durable.api.answers import WIRE_STATUS
from durable.models import Assistant, AssistantVersion, Cron, Run, Thread
from durable.snapshots import checkpoint_json, interrupt_json, state_json
from durable.values import jsonable

__all__ = [
    "checkpoint_json",
    "interrupt_json",
    "state_json",
    "thread_json",
    "run_json",
    "cron_json",
    "assistant_json",
    "version_json",
    "item_json",
]

# When the registered graphs were read, which is when this process loaded the API: a
# graph's default assistant's created_at and updated_at (graphs are registered in code, not stored).
REGISTERED_AT = timezone.now()


def run_statuses(wire: str) -> list[str]:
    """The ``Run.Status`` values a wire status stands for (to filter runs by it)."""
    return [s for s in Run.Status.values if WIRE_STATUS.get(s, s) == wire]


def thread_json(thread: Thread) -> dict:
    """A thread as the Agent Server's ``Thread``: ``thread_id`` is its ``name``; its
    metadata carries ``graph_id`` and ``assistant_id`` once a graph is bound (the stored
    assistant its latest run was on, else the graph's own); ``values``
    and ``interrupts`` (by task id) are its latest state's; ``state_updated_at`` is when
    its latest checkpoint was written (its creation before it has one), ``config`` that
    of its latest run (``{}`` before it has one)."""
    latest = engine.thread_state(thread)
    interrupts: dict[str, list] = {}
    for t in latest.tasks:
        if t.interrupts:
            interrupts[t.id] = [interrupt_json(i) for i in t.interrupts]
    metadata = dict(thread.metadata)
    last_run = thread.runs.order_by("-pk").values("config", "assistant__assistant_id").first()
    last_run = last_run or {}
    if thread.graph:
        assistant = last_run.get("assistant__assistant_id")
        metadata.update(
            graph_id=thread.graph, assistant_id=str(assistant) if assistant else thread.graph
        )
    return {
        "thread_id": thread.name,
        "created_at": thread.created_at,
        "updated_at": thread.updated_at,
        "state_updated_at": latest.created_at or thread.created_at,
        "metadata": metadata,
        "config": last_run.get("config") or {},
        "status": thread.status,
        "values": jsonable(latest.values),
        "interrupts": interrupts,
    }


def run_json(run: Run) -> dict:
    """A run as ``answers.Run`` declares it (built through it, so that what is sent is
    what the OpenAPI document says). ``run.thread`` and ``run.assistant`` are read:
    select them with the run."""
    return answers.Run(
        run_id=str(run.pk),
        thread_id=run.thread.name,
        assistant_id=str(run.assistant.assistant_id) if run.assistant_pk else run.graph,
        assistant_version=run.assistant_version,
        created_at=run.created_at,
        updated_at=run.ended_at or run.started_at or run.created_at,
        status=WIRE_STATUS.get(run.status, run.status),
        metadata=run.metadata,
        kwargs={
            "input": run.input,
            "command": run.command,
            "config": run.config,
            "context": run.context,
            "stream_mode": run.stream_modes,
            "interrupt_before": run.interrupt_before,
            "interrupt_after": run.interrupt_after,
        },
        multitask_strategy=run.multitask_strategy,
        kind=run.kind,
        durability=run.durability,
        requested_by=run.requested_by,
        checkpoint_id=run.checkpoint_id or None,
        interrupts=run.interrupts,
        error=(
            {"error": run.error_type, "message": run.error_message, "node": run.error_node}
            if run.error_type
            else None
        ),
        stop_detail=run.stop_detail or None,
    ).model_dump()


def version_json(found: AssistantVersion | Assistant | str) -> dict:
    """An assistant's version as the Agent Server's ``AssistantVersion``; a stored
    ``Assistant`` gives its latest, a registered graph's name its default assistant's
    one version (no config, no context)."""
    if isinstance(found, str):
        return {
            "assistant_id": found,
            "graph_id": found,
            "name": found,
            "description": None,
            "config": {},
            "context": {},
            "metadata": {},
            "version": 1,
            "created_at": REGISTERED_AT,
        }
    owner = found if isinstance(found, Assistant) else found.assistant
    return {
        "assistant_id": str(owner.assistant_id),
        "graph_id": found.graph_id,
        "name": found.name,
        "description": found.description,
        "config": found.config,
        "context": found.context,
        "metadata": found.metadata,
        "version": found.version,
        "created_at": found.created_at,
    }


def assistant_json(found: Assistant | str) -> dict:
    """An assistant as the Agent Server's ``Assistant``: a stored one at its latest
    version, or a registered graph (its name) as its own default assistant."""
    shaped = version_json(found)
    shaped["updated_at"] = REGISTERED_AT if isinstance(found, str) else found.updated_at
    return shaped


def item_json(found) -> dict:
    """A store ``Item`` (or ``SearchItem``, with its ``score``) as the Agent Server's."""
    shaped = {
        "namespace": list(found.namespace),
        "key": found.key,
        "value": found.value,
        "created_at": found.created_at,
        "updated_at": found.updated_at,
    }
    if getattr(found, "score", None) is not None:
        shaped["score"] = found.score
    return shaped


def cron_json(cron: Cron) -> dict:
    """A cron as the Agent Server's ``Cron``: ``thread_id`` is its thread's ``name``
    (``None`` without one); ``payload`` is what each fire's run is started with."""
    return {
        "cron_id": str(cron.cron_id),
        "assistant_id": cron.assistant_id,
        "thread_id": cron.thread.name if cron.thread_id is not None else None,
        "on_run_completed": cron.on_run_completed if cron.thread_id is None else None,
        "end_time": cron.end_time,
        "schedule": cron.schedule,
        "timezone": cron.timezone,
        "created_at": cron.created_at,
        "updated_at": cron.updated_at,
        "payload": jsonable(cron.payload),
        "user_id": cron.user_id or None,
        "next_run_date": cron.next_run_date,
        "metadata": jsonable(cron.metadata),
        "enabled": cron.enabled,
    }
