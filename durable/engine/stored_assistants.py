"""Assistants as stored configurations of a registered graph: what a run on one gets
(``resolve_assistant``, the one rule every surface that starts runs calls: the API's
thread and stateless runs, and crons), and the requests that change them
(``create_assistant``, ``update_assistant``, ``set_latest_version``,
``delete_assistant``), each checked before anything is written and audited in the
transaction that does it.

An ``assistant_id`` names either a stored assistant of the tenant (its UUID) or a
registered graph, which serves as its own default assistant under its name (version 1,
no config, no context), as it always has: clients that name the graph keep working.

Refusals raise ``InvalidRequest`` naming the field: ``graph_id``, ``config`` (or the
path below it the graph's config schema refuses, ``config.configurable.user``),
``context``, ``metadata``, ``name``, ``description``, ``version``; ``assistant`` (409)
for an id the tenant already has; ``assistant_id`` for a graph's default assistant,
which is not stored and so cannot change. An unknown ``assistant_id`` raises
``UnknownAssistant`` (the API's 404).
"""

from __future__ import annotations

import json
import uuid
import warnings
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max
from langgraph.warnings import LangGraphDeprecatedSinceV10
from pydantic import ValidationError

from durable import audit
from durable.engine.checks import InvalidRequest, check_storable, checked_metadata, compiled_graph
from durable.engine.operations import delete_thread
from durable.engine.options import graph_options
from durable.graphs import graph_names
from durable.models import NAME_MAX_LENGTH, Assistant, AssistantVersion, Tenant, Thread
from durable.persistence.metadata import canonical

# The name of an assistant created without one, as the Agent Server names it.
UNTITLED = "Untitled"
# What a version holds, as copied between an assistant and its versions.
VERSIONED = ("graph_id", "name", "description", "config", "context", "metadata")


class UnknownAssistant(InvalidRequest):
    """``assistant_id`` names neither a stored assistant of the tenant nor a registered
    graph."""

    def __init__(self, assistant_id: str):
        super().__init__(
            "assistant_id",
            f"Assistant {assistant_id!r} not found. Registered graphs: {', '.join(graph_names())}.",
        )


@dataclass(frozen=True)
class RunAssistant:
    """What a run on an assistant runs: ``graph`` (a registered graph's name), the
    stored ``assistant`` and its latest ``version`` (both ``None`` for a graph's default
    assistant), and the run's ``config`` and ``context`` with the assistant's merged
    under them (``None`` where neither gives one)."""

    graph: str
    assistant: Assistant | None
    version: int | None
    config: dict | None
    context: dict | None

    def asked(self) -> dict:
        """What ``start`` and ``resume`` (``durable.engine.runs``) take for a run
        on this assistant: ``{"assistant", "config", "context"}``; a caller starts one
        as ``start(chosen.graph, input, ..., **chosen.asked())`` (or
        ``RunRequest.on_assistant(chosen, ...)``)."""
        return {"assistant": self, "config": self.config, "context": self.context}

    def run_fields(self) -> dict:
        """The Run fields that name the assistant and version."""
        return {"assistant": self.assistant, "assistant_version": self.version}


def resolve_assistant(
    tenant: Tenant, assistant_id: str, config: dict | None = None, context: dict | None = None
) -> RunAssistant:
    """The assistant ``assistant_id`` names in ``tenant`` (a stored assistant's UUID, or
    a registered graph's name), with the run's own ``config`` and ``context`` merged over
    the assistant's: the run's keys win, and ``configurable`` is merged key by key (so
    a run may set one configurable key and keep the assistant's others); ``context``
    likewise, key by key. Raises ``UnknownAssistant``. The merged values are checked
    with the run's other options (``durable.engine.options.graph_options``)."""
    stored = find_assistant(tenant, assistant_id)
    if stored is not None:
        return RunAssistant(
            stored.graph_id,
            stored,
            stored.version,
            merged_config(stored.config, config),
            _merged(stored.context, context),
        )
    if assistant_id not in graph_names():
        raise UnknownAssistant(assistant_id)
    return RunAssistant(assistant_id, None, None, config, context)


def merged_config(base: dict | None, own: dict | None) -> dict | None:
    """``own`` over ``base`` (``{"configurable", "recursion_limit", "tags"}``): its keys
    win, ``configurable`` merged key by key."""
    if not base:
        return own
    if not isinstance(own, dict):
        return dict(base) if own is None else own  # not an object: the run's check says so
    merged = {**base, **own}
    if isinstance(base.get("configurable"), dict) and isinstance(own.get("configurable"), dict):
        merged["configurable"] = {**base["configurable"], **own["configurable"]}
    return merged


def _merged(base: dict | None, own: dict | None) -> dict | None:
    if not base:
        return own
    if own is None:
        return dict(base)
    return {**base, **own} if isinstance(own, dict) else own


def find_assistant(tenant: Tenant, assistant_id: Any) -> Assistant | None:
    """``tenant``'s stored assistant ``assistant_id`` (its UUID, as text or a UUID), or
    ``None`` (anything that is not a UUID, a graph's name included)."""
    try:
        key = assistant_id if isinstance(assistant_id, uuid.UUID) else uuid.UUID(assistant_id)
    except (TypeError, ValueError, AttributeError):
        return None
    return Assistant.objects.of_tenants(tenant).filter(assistant_id=key).first()


def default_assistant(assistant_id: str) -> bool:
    """Whether ``assistant_id`` is a registered graph's own default assistant."""
    return assistant_id in graph_names()


# -- checks ----------------------------------------------------------------------------


def checked_config(graph: str, config: Any, context: Any) -> tuple[dict, dict]:
    """``(config, context)`` of an assistant of ``graph``, as a run would take them
    (``graph_options``: config keys ``configurable``, ``recursion_limit``, ``tags``; a
    context the graph's context schema takes), and config the graph's config schema
    (LangGraph's ``config_schema()``) accepts. Raises ``InvalidRequest`` naming
    ``graph_id``, ``config`` or the path below it, or ``context``."""
    compiled = _graph(graph)
    options = graph_options(compiled, config=config, context=context)
    check_config_schema(compiled, options["config"])
    return options["config"], options["context"] or {}


def check_config_schema(compiled, config: dict) -> None:
    """Raises ``InvalidRequest`` naming ``config`` or the path below it when the config
    schema of ``compiled`` (LangGraph's ``config_schema()``) refuses ``config`` (as
    ``graph_options`` keeps it)."""
    try:
        with warnings.catch_warnings():
            # Deprecated for the context schema in LangGraph 1; still what the Agent
            # Server's assistants are checked against.
            warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
            compiled.config_schema().model_validate(config)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = ".".join(["config", *(str(p) for p in first["loc"])])
        raise InvalidRequest(
            path, f"{path}: {first['msg']} (the graph's config schema refuses it)."
        ) from None


def _graph(graph: Any):
    if not isinstance(graph, str) or graph not in graph_names():
        raise InvalidRequest(
            "graph_id",
            f"Graph {str(graph)[:100]!r} is not registered. Registered graphs: "
            f"{', '.join(graph_names())}.",
        )
    return compiled_graph(graph)


def _name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidRequest("name", "name must be a non-empty string.")
    if len(name) > NAME_MAX_LENGTH:
        raise InvalidRequest("name", f"name is over {NAME_MAX_LENGTH} characters.")
    check_storable(name, "name")
    return name


def _description(description: Any) -> str | None:
    if description is None:
        return None
    if not isinstance(description, str):
        raise InvalidRequest("description", "description must be a string.")
    check_storable(description, "description")
    return description


def _metadata(metadata: Any) -> dict:
    # Sorted keys: SQLite compares nested metadata as text (durable.persistence.metadata).
    return json.loads(canonical(checked_metadata(metadata)))


# -- requests --------------------------------------------------------------------------


def create_assistant(
    tenant: Tenant,
    graph_id: str,
    *,
    config: dict | None = None,
    context: dict | None = None,
    metadata: dict | None = None,
    name: str | None = None,
    description: str | None = None,
    assistant_id: str | uuid.UUID | None = None,
    requested_by: Any = None,
) -> Assistant:
    """A new assistant of ``tenant`` for registered graph ``graph_id``, version 1;
    ``assistant_id`` a UUID (default: a new one), ``name`` default ``"Untitled"``.
    Raises ``InvalidRequest`` (see the module) and ``InvalidRequest("assistant")``
    for an id the tenant already has."""
    key = _uuid(assistant_id) if assistant_id is not None else uuid.uuid4()
    fields = {
        "graph_id": graph_id,
        "name": _name(UNTITLED if name is None else name),
        "description": _description(description),
        "metadata": _metadata(metadata),
    }
    fields["config"], fields["context"] = checked_config(graph_id, config, context)
    exists = InvalidRequest("assistant", f"Assistant {str(key)!r} already exists.")
    try:
        with transaction.atomic():
            if Assistant.objects.filter(tenant=tenant, assistant_id=key).exists():
                raise exists
            made = Assistant.objects.create(tenant=tenant, assistant_id=key, version=1, **fields)
            AssistantVersion.objects.create(assistant=made, version=1, **fields)
            _record(audit.Action.ASSISTANT_CREATE, made, requested_by)
    except IntegrityError:  # another request created the same id meanwhile
        raise exists from None
    return made


def _uuid(value: Any) -> uuid.UUID:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        raise InvalidRequest("assistant_id", "assistant_id must be a UUID.") from None


def update_assistant(
    assistant: Assistant,
    *,
    graph_id: str | None = None,
    config: dict | None = None,
    context: dict | None = None,
    metadata: dict | None = None,
    name: str | None = None,
    description: str | None = None,
    requested_by: Any = None,
) -> Assistant:
    """A new version of ``assistant``, made its latest, as the Agent Server's ``PATCH``:
    each field given replaces the latest version's (``metadata`` is merged into it, key
    by key), the others stay; config and context are checked against the graph the
    assistant runs then; an assistant with crons keeps its graph
    (``InvalidRequest("graph_id")``). Returns the assistant as it now is."""
    with transaction.atomic():
        current = Assistant.objects.select_for_update().get(pk=assistant.pk)
        graph = current.graph_id if graph_id is None else graph_id
        _check_keeps_its_crons(current, graph, "graph_id")
        fields = {
            "graph_id": graph,
            "name": current.name if name is None else _name(name),
            "description": current.description
            if description is None
            else _description(description),
            "metadata": _metadata({**current.metadata, **checked_metadata(metadata)}),
        }
        fields["config"], fields["context"] = checked_config(
            graph,
            current.config if config is None else config,
            current.context if context is None else context,
        )
        highest = current.versions.aggregate(v=Max("version"))["v"] or 0
        AssistantVersion.objects.create(assistant=current, version=highest + 1, **fields)
        for key, value in fields.items():
            setattr(current, key, value)
        current.version = highest + 1
        current.save()
        _record(audit.Action.ASSISTANT_UPDATE, current, requested_by)
    return current


def set_latest_version(
    assistant: Assistant, version: Any, *, requested_by: Any = None
) -> Assistant:
    """Make ``version`` (a number of one of ``assistant``'s versions) its latest: the
    assistant takes that version's fields, and runs on it use them from now on. Raises
    ``InvalidRequest("version")`` for a version it does not have, or one of another
    graph while the assistant has crons."""
    if not isinstance(version, int) or isinstance(version, bool):
        raise InvalidRequest("version", "version must be an integer.")
    with transaction.atomic():
        current = Assistant.objects.select_for_update().get(pk=assistant.pk)
        chosen = current.versions.filter(version=version).first()
        if chosen is None:
            raise InvalidRequest(
                "version", f"Assistant {str(current.assistant_id)!r} has no version {version}."
            )
        _check_keeps_its_crons(current, chosen.graph_id, "version")
        for key in VERSIONED:
            setattr(current, key, getattr(chosen, key))
        current.version = version
        current.save()
        _record(audit.Action.ASSISTANT_SET_LATEST, current, requested_by)
    return current


def _check_keeps_its_crons(current: Assistant, graph: str, field: str) -> None:
    """Refuse moving an assistant that has crons to another graph: their runs' input and
    config were checked against the graph it runs now, and each fire would be refused."""
    if graph != current.graph_id and current.crons.exists():
        raise InvalidRequest(
            field,
            f"Assistant {str(current.assistant_id)!r} has crons of graph "
            f"{current.graph_id!r}: delete them before moving it to graph {graph!r}.",
        )


def delete_assistant(
    assistant: Assistant, *, delete_threads: bool = False, requested_by: Any = None
) -> None:
    """Delete ``assistant``, its versions and its crons (their beat tasks with them:
    ``durable.engine.beat``). Its runs stay, with their own config and context, and no
    longer name it; with ``delete_threads``, the threads of the tenant
    that ran on it are deleted too (``delete_thread``), all in one transaction: a thread
    with a running run refuses the whole (``InvalidRequest("thread")``)."""
    with transaction.atomic():
        crons = [str(cron_id) for cron_id in assistant.crons.values_list("cron_id", flat=True)]
        _record(audit.Action.ASSISTANT_DELETE, assistant, requested_by, crons=crons)
        if delete_threads:
            ran = Thread.objects.filter(tenant=assistant.tenant, runs__assistant=assistant)
            for thread in ran.distinct():
                delete_thread(
                    thread,
                    requested_by=requested_by,
                    reason=f"its assistant {assistant.assistant_id} was deleted",
                )
        assistant.delete()


def _record(action: str, assistant: Assistant, requested_by: Any, **more: Any) -> None:
    audit.record(
        action,
        actor=requested_by,
        tenant=assistant.tenant,
        detail={
            "assistant_id": str(assistant.assistant_id),
            "graph_id": assistant.graph_id,
            "name": assistant.name,
            "version": assistant.version,
            **more,
        },
    )
