"""What a run is asked beyond its input, checked before anything is written: the graph's
config and runtime context, LangGraph's breakpoints, a start time, a webhook
(``graph_options``); and what a ``Command`` carries besides ``resume``: ``goto`` and
``update`` (``command_for``). Each check raises ``InvalidRequest`` naming the field:
``config``, ``context``, ``interrupt_before``, ``interrupt_after``, ``after_seconds``,
``webhook``, ``goto``, ``update`` or ``resume``.

The run keeps what passed as its own fields (``Run.config``, ``context``,
``interrupt_before``, ``interrupt_after``, ``not_before``, ``webhook``, ``command``), and
its worker hands them to LangGraph's ``stream`` (``durable.engine.execution``).
"""

from __future__ import annotations

from dataclasses import is_dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.utils import timezone
from langgraph.constants import END
from pydantic import BaseModel, PydanticUserError, TypeAdapter, ValidationError

from durable import conf
from durable.engine.checks import InvalidRequest, check_storable, resume_command, run_options
from durable.engine.requests import RunRequest

# Keys of ``configurable`` that name the thread, the checkpoint and the run: the engine
# sets them, so a caller's are dropped (as the Agent Server overrides them), as are
# LangGraph's and the Agent Server's own dunder keys (``__pregel_*``, ``__after_seconds__``).
OWN_CONFIGURABLE = ("thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map", "run_id")
ALL_NODES = "*"
# The longest delay ``after_seconds`` may ask: beyond it a start time is a mistake.
MAX_AFTER_SECONDS = 366 * 24 * 3600


def run_fields(request: RunRequest, compiled) -> dict:
    """The Run fields of ``request``'s options for a run of ``compiled``
    (``checks.run_options`` and ``graph_options``), and the assistant and version it is
    on. Raises ``InvalidRequest`` naming the field."""
    fields = run_options(request) | graph_options(
        compiled,
        config=request.config,
        context=request.context,
        interrupt_before=request.interrupt_before,
        interrupt_after=request.interrupt_after,
        after_seconds=request.after_seconds,
        webhook=request.webhook,
    )
    if request.assistant is not None:
        fields |= request.assistant.run_fields()
    return fields


def graph_options(
    compiled,
    *,
    config: dict | None = None,
    context: dict | None = None,
    interrupt_before: Any = None,
    interrupt_after: Any = None,
    after_seconds: float | None = None,
    webhook: str | None = None,
) -> dict:
    """The Run fields for these options of a run of ``compiled``: ``config``
    (``{"configurable": {...}, "recursion_limit": int, "tags": [str]}``; the keys of
    ``OWN_CONFIGURABLE`` dropped), ``context`` (a JSON object, coerced by the graph's
    ``context_schema`` when that is a dataclass or a pydantic model, as LangGraph's
    ``stream`` coerces it), breakpoints (``"*"`` or node names), ``not_before`` (now +
    ``after_seconds``), ``webhook`` (an http(s) URL whose host
    ``DURABLE_WEBHOOK_ALLOWED_HOSTS`` allows)."""
    return {
        "config": _config(config),
        "context": _context(compiled, context),
        "interrupt_before": _breakpoints(compiled, interrupt_before, "interrupt_before"),
        "interrupt_after": _breakpoints(compiled, interrupt_after, "interrupt_after"),
        "not_before": _not_before(after_seconds),
        "webhook": check_webhook(webhook),
    }


def _config(config: Any) -> dict:
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise InvalidRequest("config", "config must be a JSON object.")
    if unknown := sorted(set(config) - {"configurable", "recursion_limit", "tags"}):
        raise InvalidRequest(
            "config",
            f"Unknown config key(s): {', '.join(unknown)}; "
            "config takes configurable, recursion_limit and tags.",
        )
    kept: dict[str, Any] = {}
    configurable = config.get("configurable")
    if configurable is not None:
        if not isinstance(configurable, dict):
            raise InvalidRequest("config.configurable", "configurable must be a JSON object.")
        check_storable(configurable, "config.configurable")
        kept["configurable"] = {
            k: v
            for k, v in configurable.items()
            if k not in OWN_CONFIGURABLE and not k.startswith("__")
        }
    limit = config.get("recursion_limit")
    if limit is not None:
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise InvalidRequest(
                "config.recursion_limit", "recursion_limit must be a positive integer."
            )
        kept["recursion_limit"] = limit
    tags = config.get("tags")
    if tags is not None:
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise InvalidRequest("config.tags", "tags must be a list of strings.")
        check_storable(tags, "config.tags")
        kept["tags"] = tags
    return kept


def _context(compiled, context: Any) -> dict | None:
    if context is None:
        return None
    if not isinstance(context, dict):
        raise InvalidRequest("context", "context must be a JSON object.")
    check_storable(context, "context")
    schema = getattr(compiled, "context_schema", None)
    if isinstance(schema, type) and (issubclass(schema, BaseModel) or is_dataclass(schema)):
        _check_context_types(schema, context)
        try:
            schema(**context)
        except (TypeError, ValueError) as exc:
            first = next(iter(str(exc).splitlines()), "")[:300]
            raise InvalidRequest(
                "context", f"context does not fit the graph's context schema: {first}"
            ) from None
    return context


def _check_context_types(schema: type, context: dict) -> None:
    """Refuse a value of a type the context schema's field does not take (``{"user":
    5}`` for ``user: str``), naming ``context.<key>``. LangGraph builds a dataclass
    context without checking its types, so the graph would see the wrong one."""
    try:
        adapter = TypeAdapter(schema)
    except PydanticUserError:  # a type pydantic cannot describe: nothing to check by
        return
    try:
        adapter.validate_python(context)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(["context", *(str(p) for p in problem["loc"])])
        raise InvalidRequest(
            where, f"{where}: {problem['msg']} (the graph's context schema refuses it)."
        ) from None


def _breakpoints(compiled, nodes: Any, field: str) -> str | list[str] | None:
    """``"*"`` (every node) or a list of the graph's node names; LangGraph itself takes
    an unknown name silently and never stops there."""
    if nodes is None or nodes == ALL_NODES:
        return nodes
    if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
        raise InvalidRequest(field, f'{field} must be "*" or a list of node names.')
    known = _node_names(compiled)
    if unknown := sorted({n for n in nodes if n not in known}):
        raise InvalidRequest(
            field,
            f"Unknown node(s) {', '.join(repr(n[:100]) for n in unknown[:5])}. "
            f"The graph's nodes: {', '.join(known)}.",
        )
    return nodes


def _node_names(compiled) -> list[str]:
    """The graph's own nodes, without LangGraph's ``__start__``."""
    return [n for n in compiled.nodes if not n.startswith("__")]


def _not_before(after_seconds: Any):
    if after_seconds is None or after_seconds == 0:
        return None
    if not isinstance(after_seconds, (int, float)) or isinstance(after_seconds, bool):
        raise InvalidRequest("after_seconds", "after_seconds must be a number of seconds.")
    if not 0 <= after_seconds <= MAX_AFTER_SECONDS:
        raise InvalidRequest(
            "after_seconds", f"after_seconds must be between 0 and {MAX_AFTER_SECONDS} (a year)."
        )
    return timezone.now() + timedelta(seconds=after_seconds)


def check_webhook(url: Any) -> str:
    """``url`` if a run may post its outcome there: http or https, to a host that
    ``DURABLE_WEBHOOK_ALLOWED_HOSTS`` names (none by default: the server calls out only
    where its operator allows). ``None`` is no webhook (``""``). Raises
    ``InvalidRequest("webhook")``."""
    if url is None or url == "":
        return ""
    if not isinstance(url, str):
        raise InvalidRequest("webhook", "webhook must be a URL.")
    check_storable(url, "webhook")
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        raise InvalidRequest("webhook", "webhook is not a valid URL.") from None
    if parts.scheme not in ("http", "https") or not host:
        raise InvalidRequest("webhook", "webhook must be an absolute http(s) URL.")
    allowed = {h.strip().lower() for h in conf.DURABLE_WEBHOOK_ALLOWED_HOSTS if h.strip()}
    if host not in allowed:
        raise InvalidRequest(
            "webhook",
            f"This server posts webhooks only to the hosts DURABLE_WEBHOOK_ALLOWED_HOSTS "
            f"names; {host[:100]!r} is not one of them.",
        )
    return url


# -- commands ---------------------------------------------------------------------------


def command_for(
    compiled,
    state,
    thread_name: str,
    value: Any = None,
    answers: dict | None = None,
    goto: Any = None,
    update: Any = None,
) -> dict:
    """The ``command`` of a resume run on a thread whose latest state is ``state``
    (a ``StateSnapshot``): ``{"resume"?, "goto"?, "update"?}``, as LangGraph's ``Command``
    takes them.

    A resume (``value`` or ``answers``) answers the pending interrupts
    (``checks.resume_command``); with none recorded but next tasks to run, ``value`` goes
    to the next ``interrupt()`` that runs, as in LangGraph (``Command(resume=...)`` on
    such a thread). Without ``goto`` or ``update``, ``value`` ``None`` is a resume too
    (the console's). Refused when nothing would run: no interrupt, no next task and no
    ``goto`` (``resume``). ``goto``: a node name (or ``"__end__"``), a list of them, or
    ``{"node", "input"}`` sends (``goto``). ``update``: a JSON object of state keys, or a list of
    ``[key, value]`` pairs (``update``)."""
    goto = _goto(compiled, goto)
    update = _update(compiled, update)
    command: dict[str, Any] = {}
    resuming = answers is not None or value is not None or (goto is None and update is None)
    if resuming:
        pending = list(state.interrupts)
        if pending:
            command.update(resume_command(pending, value, answers))
        elif not state.next and goto is None:
            raise InvalidRequest(
                "resume",
                f"Thread {thread_name!r} has no pending interrupt to resume, and no next "
                "task a resume would run.",
            )
        elif answers is not None:
            raise InvalidRequest("answers", "No interrupt is pending to answer by id.")
        else:
            check_storable(value, "resume")
            command["resume"] = value
    if goto is not None:
        command["goto"] = goto
    if update is not None:
        command["update"] = update
    return command


def _goto(compiled, goto: Any) -> Any:
    if goto is None:
        return None
    items = goto if isinstance(goto, list) else [goto]
    if not items:
        return None
    # END too: Agent Chat UI's "Mark as resolved" sends it (LangGraph ignores it).
    nodes = [*_node_names(compiled), END]
    for item in items:
        if isinstance(item, dict):
            if set(item) - {"node", "input"} or not isinstance(item.get("node"), str):
                raise InvalidRequest("goto", 'A send is {"node": name, "input": value}.')
            name = item["node"]
        elif isinstance(item, str):
            name = item
        else:
            raise InvalidRequest("goto", "goto takes node names or sends.")
        if name not in nodes:
            raise InvalidRequest(
                "goto", f"Unknown node {name[:100]!r}. The graph's nodes: {', '.join(nodes)}."
            )
    check_storable(goto, "goto")
    return goto


def _update(compiled, update: Any) -> Any:
    if update is None:
        return None
    if isinstance(update, dict):
        keys = list(update)
    elif isinstance(update, list) and all(
        isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in update
    ):
        keys = [p[0] for p in update]
    else:
        raise InvalidRequest(
            "update", "update must be a JSON object of state keys, or [key, value] pairs."
        )
    channels = set(compiled.builder.channels)
    if unknown := sorted(set(keys) - channels):
        raise InvalidRequest(
            "update",
            f"Unknown state key(s): {', '.join(unknown)}. The state has: "
            f"{', '.join(sorted(channels))}.",
        )
    check_storable(update, "update")
    return update
