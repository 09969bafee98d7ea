"""What an interrupt asks, read from its payload: its kind, its actions with the decisions
they allow, and an input per editable argument. Pages show these; the answer form
(``dashboard.forms.resume``) builds its fields from them.

The payload kinds (``HITL``, ``HUMAN``, ``GENERIC``) and which one a value is are decided
in ``durable.interrupt_payloads``; pages and forms read them through this module.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from dashboard.present.values import EDIT_LIMIT

# The kinds, as the console's pages and forms read them from here.
from durable.interrupt_payloads import GENERIC, HITL, HUMAN, human_payload, kind_of  # noqa: F401

# agent-inbox's response types, each with the config flag that allows it.
HUMAN_RESPONSES = (
    ("accept", "allow_accept"),
    ("edit", "allow_edit"),
    ("response", "allow_respond"),
    ("ignore", "allow_ignore"),
)


# -- editable arguments ---------------------------------------------------------------


@dataclass
class ArgSpec:
    """One editable argument: ``kind`` is ``string`` (one line), ``text`` (several),
    ``number``, ``integer``, ``boolean``, ``choice`` (a string enum, ``choices``) or
    ``json`` (anything else, edited as JSON text). ``initial`` is the value now."""

    key: str
    kind: str
    initial: Any = None
    required: bool = False
    description: str = ""
    choices: list[str] = field(default_factory=list)

    @property
    def initial_text(self) -> str:
        """``initial`` as the input shows it."""
        if self.initial is None and self.kind != "json":
            return ""
        if self.kind in ("string", "text", "choice"):
            return str(self.initial)
        return json.dumps(
            self.initial, indent=2 if self.kind == "json" else None, ensure_ascii=False
        )

    @property
    def too_large(self) -> bool:
        """Whether the value is too long to put in an input: the form then leaves the
        argument out, which keeps it as it is."""
        return len(self.initial_text) > EDIT_LIMIT


SIMPLE_TYPES = {"string", "number", "integer", "boolean"}


def specs_from_schema(args: dict, schema: Any) -> list[ArgSpec] | None:
    """Per-argument inputs from a JSON schema ``{"type": "object", "properties":
    {...}}``: simple types get their own input, anything else a JSON box; arguments
    the schema does not list are JSON boxes too. ``None`` when ``schema`` is not such
    an object schema (the arguments are then edited as one JSON object)."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return None
    required = set(schema.get("required") or ())
    specs = [
        _spec_from_property(key, prop, args.get(key), key in required)
        for key, prop in schema["properties"].items()
    ]
    listed = set(schema["properties"])
    return specs + [ArgSpec(k, "json", v) for k, v in args.items() if k not in listed]


def _spec_from_property(key: str, prop: Any, value: Any, required: bool) -> ArgSpec:
    prop = prop if isinstance(prop, dict) else {}
    kind = prop.get("type") if prop.get("type") in SIMPLE_TYPES else "json"
    spec = ArgSpec(key, kind, value, required, str(prop.get("description") or ""))
    enum = prop.get("enum")
    if kind == "string" and isinstance(enum, list) and all(isinstance(e, str) for e in enum):
        spec.kind, spec.choices = "choice", list(enum)
    elif kind == "string" and isinstance(value, str) and ("\n" in value or len(value) > 80):
        spec.kind = "text"
    return spec


def specs_from_values(args: dict) -> list[ArgSpec]:
    """Per-argument inputs inferred from the arguments' current values (agent-inbox
    edits each argument in its own field). An agent-inbox request carries no schema, so
    its arguments are what the action takes: each one that has a value is required (an
    edit changes it, it cannot empty it)."""
    return [_spec_from_value(key, value) for key, value in args.items()]


def _spec_from_value(key: str, value: Any) -> ArgSpec:
    required = value is not None and value != ""
    if isinstance(value, bool):
        return ArgSpec(key, "boolean", value, required)
    if isinstance(value, int):
        return ArgSpec(key, "integer", value, required)
    if isinstance(value, float):
        return ArgSpec(key, "number", value, required)
    if isinstance(value, str):
        kind = "text" if "\n" in value or len(value) > 80 else "string"
        return ArgSpec(key, kind, value, required)
    return ArgSpec(key, "json", value, required)


# -- the two action schemas ----------------------------------------------------------


@dataclass
class Action:
    """One action of a ``HITLRequest``, with the decisions its review config allows
    and, when the config has an ``args_schema``, its per-argument inputs (``specs``)."""

    index: int
    name: str
    args: dict
    description: str
    allowed: list[str] = field(default_factory=list)
    args_schema: dict | None = None
    specs: list[ArgSpec] | None = None


def hitl_actions(value: dict) -> list[Action]:
    """The actions of a ``HITLRequest`` paired with their review config (matched by
    ``action_name``; an action with no review config allows no decision)."""
    configs = {
        config.get("action_name"): config
        for config in value["review_configs"]
        if isinstance(config, dict)
    }
    actions = []
    for i, request in enumerate(value["action_requests"]):
        if not isinstance(request, dict):
            continue
        config = configs.get(request.get("name"), {})
        args = request.get("args") if isinstance(request.get("args"), dict) else {}
        schema = config.get("args_schema") if isinstance(config.get("args_schema"), dict) else None
        actions.append(
            Action(
                index=i,
                name=str(request.get("name", "")),
                args=args,
                description=str(request.get("description") or ""),
                allowed=list(config.get("allowed_decisions", [])),
                args_schema=schema,
                specs=specs_from_schema(args, schema),
            )
        )
    return actions


@dataclass
class HumanRequest:
    """An agent-inbox ``HumanInterrupt``: the action (``action``, ``args``), its
    markdown ``description``, the response types its config allows (``allowed``,
    among accept, edit, response, ignore) and per-argument inputs (``specs``)."""

    action: str
    args: dict
    description: str
    allowed: list[str]
    specs: list[ArgSpec]

    @property
    def action_request(self) -> dict:
        return {"action": self.action, "args": self.args}


def human_request(value: Any) -> HumanRequest:
    """The ``HumanInterrupt`` in ``value`` (``kind_of(value) == "human"``)."""
    payload = human_payload(value)
    request, config = payload["action_request"], payload["config"]
    args = request.get("args") if isinstance(request.get("args"), dict) else {}
    return HumanRequest(
        action=str(request.get("action", "")),
        args=args,
        description=str(payload.get("description") or ""),
        allowed=[kind for kind, flag in HUMAN_RESPONSES if config.get(flag) is True],
        specs=specs_from_values(args),
    )
