"""Recognising interrupt payloads and turning operator answers into resume values.

Schemas (see shared UI-REFERENCES, section 1.2):

- LangChain v1 ``HITLRequest``: ``{"action_requests": [{name, args, description?}],
  "review_configs": [{action_name, allowed_decisions}]}``, resumed with
  ``{"decisions": [one decision per action, in order]}``.
- anything else: shown as JSON and answered with a JSON value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

HITL = "hitl"
GENERIC = "generic"


def kind_of(value: Any) -> str:
    """``"hitl"`` for a LangChain v1 ``HITLRequest`` payload, else ``"generic"``."""
    if (
        isinstance(value, dict)
        and isinstance(value.get("action_requests"), list)
        and isinstance(value.get("review_configs"), list)
    ):
        return HITL
    return GENERIC


@dataclass
class Action:
    """One action of a ``HITLRequest``, with the decisions its review config allows."""

    index: int
    name: str
    args: dict
    description: str
    allowed: list[str] = field(default_factory=list)


def hitl_actions(value: dict) -> list[Action]:
    """The actions of a ``HITLRequest`` paired with their ``allowed_decisions``
    (matched by ``action_name``; an action with no review config allows none)."""
    allowed = {
        config.get("action_name"): list(config.get("allowed_decisions", []))
        for config in value["review_configs"]
        if isinstance(config, dict)
    }
    return [
        Action(
            index=i,
            name=str(request.get("name", "")),
            args=request.get("args") or {},
            description=str(request.get("description") or ""),
            allowed=allowed.get(request.get("name"), []),
        )
        for i, request in enumerate(value["action_requests"])
        if isinstance(request, dict)
    ]
