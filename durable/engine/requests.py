"""One run request, as every surface asks for a run: ``RunRequest``, built once by the
API (``RunCreate.to_request``), the console's forms and views (through the keyword
operations of ``durable.engine.operations``), a cron's fire (``durable.engine.crons``),
a replay or an answer given again; checked once (``checks.check_request``) and turned
into a Run's fields once (``run_fields``).

The resume codec is here too: what a request's ``Resume`` becomes on the Run
(``Run.command``, ``{"resume"?, "goto"?, "update"?}``, and ``Run.resume_by_id``), and
what the worker streams from it (``command``, ``answers_by_id``), so that the worker
never works out again whether a resume value was a map of interrupt ids.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from langgraph.types import Command, Send

from durable.models import Run

# What a run is asked beyond its input and resume, as a cron keeps them in its payload
# (``Cron.payload``, with the API's name ``stream_mode``) and every fire runs them.
OPTION_FIELDS = (
    "config",
    "context",
    "metadata",
    "multitask_strategy",
    "durability",
    "interrupt_before",
    "interrupt_after",
    "webhook",
    "stream_modes",
)


@dataclass(frozen=True)
class Resume:
    """LangGraph's ``Command`` as asked: ``value`` (one interrupt's answer, or a map of
    pending interrupt ids to answers, which ``checks.resume_by_id`` tells apart),
    ``answers`` (``{interrupt_id: value}``, said to be by id), ``goto`` (node names or
    ``{"node", "input"}`` sends) and ``update`` (state keys, or ``[key, value]`` pairs)."""

    value: Any = None
    answers: dict | None = None
    goto: Any = None
    update: Any = None


@dataclass(frozen=True)
class RunRequest:
    """A request for a run. ``graph`` (a registered graph's name) or ``assistant``
    (``resolve_assistant``: its graph, and its config and context merged under the
    request's, which ``on_assistant`` puts in ``config`` and ``context``); ``input`` (a
    JSON object) or ``resume``; ``checkpoint_id``, the past checkpoint it starts from
    (a replay; with ``input`` a new branch from there; with ``resume`` an answer given
    again). The run's options:
    ``stream_modes`` (``checks.STREAM_MODES``), breakpoints (``"*"`` or node names),
    ``durability``, ``webhook``, ``metadata``, ``config``, ``context``,
    ``multitask_strategy``, ``after_seconds`` and ``requested_by`` (a user or a string).
    Nothing here is checked: ``checks.check_request`` does that."""

    graph: str | None = None
    # A ``RunAssistant``, not imported: ``stored_assistants`` builds on the options that
    # read this module.
    assistant: Any = None
    input: Any = None
    resume: Resume | None = None
    checkpoint_id: str | None = None
    stream_modes: Any = None
    interrupt_before: Any = None
    interrupt_after: Any = None
    durability: str = "async"
    webhook: str | None = None
    metadata: dict | None = None
    config: dict | None = None
    context: dict | None = None
    multitask_strategy: str = "reject"
    after_seconds: float | None = None
    requested_by: Any = None

    @classmethod
    def on_assistant(cls, chosen: Any, **fields: Any) -> RunRequest:
        """A request on ``chosen`` (``resolve_assistant``): its graph, config and context."""
        return cls(
            graph=chosen.graph,
            assistant=chosen,
            config=chosen.config,
            context=chosen.context,
            **fields,
        )

    @property
    def kind(self) -> str:
        """What the request asks: ``start`` (input, or none: go on from the thread's
        next tasks), ``resume``, ``replay`` (a past checkpoint, no input, no resume),
        ``branch`` (input at a past checkpoint) or ``answer_again`` (a resume at a past
        checkpoint)."""
        if self.resume is not None:
            return "answer_again" if self.checkpoint_id is not None else "resume"
        if self.checkpoint_id is None:
            return "start"
        return "replay" if self.input is None else "branch"

    def replace(self, **changes: Any) -> RunRequest:
        return dataclasses.replace(self, **changes)


# -- the resume codec -------------------------------------------------------------------


def encoded(command: dict, by_id: bool) -> dict:
    """The Run fields of a checked resume (``checks.command_for``: ``{"resume"?, "goto"?,
    "update"?}``): ``command``, and ``resume_by_id``, whether its ``resume`` is a map of
    interrupt ids (which a run on a copied checkpoint re-keys once they fire again)."""
    return {"command": command, "resume_by_id": by_id and "resume" in command}


def command(run: Run) -> Command:
    """A resume run's ``command`` as LangGraph's ``Command``: ``goto`` sends
    (``{"node", "input"}``) as ``Send``s, ``update`` pairs as tuples."""
    stored = run.command or {}
    goto = stored.get("goto")
    if goto is not None:
        items = [_send(g) for g in (goto if isinstance(goto, list) else [goto])]
        goto = items if isinstance(goto, list) else items[0]
    update = stored.get("update")
    if isinstance(update, list):
        update = [tuple(pair) for pair in update]
    return Command(resume=stored.get("resume"), goto=goto or (), update=update)


def answers_by_id(run: Run) -> dict | None:
    """The run's answers ``{interrupt_id: value}`` when it resumes by interrupt id, else
    ``None``."""
    return (run.command or {}).get("resume") if run.resume_by_id else None


def _send(item: Any) -> Any:
    return Send(item["node"], item.get("input")) if isinstance(item, dict) else item
