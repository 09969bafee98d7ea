"""The form answering a thread's pending interrupts: one card per interrupt, with the
inputs its kind asks for (``dashboard.present.interrupts``), turned into the values of
``durable.engine.resume``. Each error names the field it is about."""

from __future__ import annotations

import json
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

from django import forms
from django.forms import BoundField
from langgraph.types import Interrupt

from dashboard.forms.fields import (
    error_on,
    field_error,
    no_nul,
    nul_message,
    parse_json,
    reason_errors,
)
from dashboard.forms.schema_form import SchemaFields
from dashboard.present import interrupts, values
from durable import engine
from durable.engine import checks
from durable.redaction import MASK, redact, redact_under, restore


@dataclass
class ArgInput:
    """One per-argument input of an edit: its ``spec`` and its bound ``field``."""

    spec: interrupts.ArgSpec
    field: BoundField


@dataclass
class ActionCard:
    """A ``HITLRequest`` action as the form shows it: the ``decision`` choice, the
    rejection ``message``, and for an edit either per-argument ``inputs`` (from the
    review config's ``args_schema``) or the ``args`` JSON box."""

    action: interrupts.Action
    decision: BoundField
    message: BoundField
    args: BoundField | None = None
    inputs: list[ArgInput] | None = None
    # The arguments as JSON are too long for the ``args`` box, which is then left out.
    args_too_large: bool = False

    @property
    def editable(self) -> bool:
        """Whether the form can edit the arguments: per argument, or as JSON."""
        return bool(self.inputs) or not self.args_too_large


@dataclass
class Card:
    """One pending interrupt as the form shows it, by ``kind``: ``actions`` (HITL);
    ``human``, ``response``, ``text`` and ``inputs`` (agent-inbox); ``answer`` and
    ``schema`` (generic). ``interrupt`` is LangGraph's ``Interrupt`` (``.id``,
    ``.value``)."""

    interrupt: Interrupt
    kind: str
    actions: list[ActionCard] = dc_field(default_factory=list)
    human: interrupts.HumanRequest | None = None
    response: BoundField | None = None
    text: BoundField | None = None
    inputs: list[ArgInput] = dc_field(default_factory=list)
    answer: BoundField | None = None
    schema: dict | None = None
    # The fields built from ``schema`` (``None``: the answer is typed as JSON only).
    typed: SchemaFields | None = None

    @property
    def id(self) -> str:
        return self.interrupt.id

    @property
    def value(self) -> Any:
        return self.interrupt.value

    @property
    def cut(self) -> bool:
        """Whether the page shows the payload shortened (``dashboard.present.values.shown``)."""
        return values.shown(self.value).cut

    @property
    def shown(self) -> Any:
        """The payload as shown: a generic one without its ``response_schema``, which
        the page shows apart."""
        if self.schema is not None and isinstance(self.value, dict):
            return {k: v for k, v in self.value.items() if k != "response_schema"}
        return self.value


class ResumeForm(forms.Form):
    """One form answering every pending interrupt of a thread, by interrupt id.

    Fields, for an interrupt with id ``iid``:

    - ``HITLRequest``, per action ``n``: ``decision-<iid>-<n>`` (one of the action's
      ``allowed_decisions``), ``message-<iid>-<n>`` (sent with a rejection), and for
      an edit ``arg-<iid>-<n>-<key>`` per argument when the review config has an
      object ``args_schema`` (checked against it), else ``args-<iid>-<n>`` (a JSON
      object). An argument input that is not submitted keeps its value.
    - agent-inbox ``HumanInterrupt``: ``response-<iid>`` (accept, edit, response or
      ignore, as its config allows), ``text-<iid>`` (a response's text) and
      ``arg-<iid>-0-<key>`` per argument (an edit).
    - anything else: ``answer-<iid>``, JSON, checked against ``response_schema``. With
      a ``response_schema`` that gives fields (``dashboard.forms.schema_form``), these
      are ``answer-<iid>.<key>``, and the JSON box, when filled, is taken instead.

    ``cards`` lists the interrupts with their bound fields for templates;
    ``one_click`` is true when one interrupt with one action is pending (each choice
    can be its own submit button). After validation ``resume_args`` holds the keyword
    arguments for ``durable.engine.resume``: ``{"value": v}`` for one interrupt, else
    ``{"answers": {iid: v}}``. Errors land on the field they are about.
    """

    def __init__(self, pending, *args, **kwargs):
        kwargs.setdefault("auto_id", "%s")  # each input's id is its name, as the page links them
        super().__init__(*args, **kwargs)
        self.pending = list(pending)
        self.cards = [self._card(item) for item in self.pending]
        self.one_click = len(self.cards) == 1 and (
            (self.cards[0].kind == interrupts.HITL and len(self.cards[0].actions) == 1)
            or self.cards[0].kind == interrupts.HUMAN
        )

    # -- building the fields ----------------------------------------------------------

    def _card(self, item) -> Card:
        kind = interrupts.kind_of(item.value)
        card = Card(interrupt=item, kind=kind)
        if kind == interrupts.HITL:
            card.actions = [self._action(item.id, a) for a in interrupts.hitl_actions(item.value)]
        elif kind == interrupts.HUMAN:
            self._human(card, interrupts.human_request(item.value))
        else:
            card.schema = checks.response_schema(item.value)
            if card.schema is not None:
                typed = SchemaFields(self._add, f"answer-{item.id}", card.schema)
                card.typed = typed if typed.usable else None
            card.answer = self._add(
                f"answer-{item.id}",
                forms.CharField(
                    required=card.typed is None,
                    label="Answer (JSON)",
                    widget=forms.Textarea(attrs={"rows": 4}),
                    error_messages={"required": "Enter an answer as JSON."},
                ),
            )
        return card

    def _add(self, name: str, form_field: forms.Field) -> BoundField:
        self.fields[name] = form_field
        return self[name]

    def _action(self, iid: str, action: interrupts.Action) -> ActionCard:
        prefix = f"{iid}-{action.index}"
        name = action.name.replace("%", "%%")
        card = ActionCard(
            action=action,
            decision=self._add(
                f"decision-{prefix}",
                forms.ChoiceField(
                    label=f"Decision for {action.name}",
                    choices=[(d, d) for d in action.allowed if d in SUPPORTED_DECISIONS],
                    error_messages={
                        "required": f"Choose a decision for {name}.",
                        "invalid_choice": f"%(value)s is not allowed for {name}.",
                    },
                ),
            ),
            message=self._add(
                f"message-{prefix}",
                forms.CharField(
                    required=False,
                    label="Reason (sent with a rejection)",
                    error_messages=reason_errors(),
                ),
            ),
        )
        if "edit" in action.allowed:
            if action.specs is not None:
                card.inputs = self._inputs(f"arg-{prefix}", action.specs)
            # Shown masked; a mask sent back unchanged keeps the value (``_hitl_args``).
            initial = json.dumps(redact(action.args), indent=2, ensure_ascii=False)
            card.args_too_large = len(initial) > values.EDIT_LIMIT
            card.args = self._add(
                f"args-{prefix}",
                forms.CharField(
                    required=False,
                    label="Arguments (JSON, sent with an edit)",
                    initial="" if card.args_too_large else initial,
                ),
            )
        return card

    def _human(self, card: Card, request: interrupts.HumanRequest) -> None:
        card.human = request
        card.response = self._add(
            f"response-{card.id}",
            forms.ChoiceField(
                label=f"Response to {request.action}",
                choices=[(r, r) for r in request.allowed],
                error_messages={
                    "required": f"Choose a response to {request.action.replace('%', '%%')}.",
                    "invalid_choice": "%(value)s is not allowed for this request.",
                },
            ),
        )
        card.text = self._add(
            f"text-{card.id}",
            forms.CharField(
                required=False,
                strip=True,
                label="Response",
                widget=forms.Textarea,
                error_messages=no_nul("response"),
            ),
        )
        if "edit" in request.allowed:
            card.inputs = self._inputs(f"arg-{card.id}-0", request.specs)

    def _inputs(self, prefix: str, specs: list[interrupts.ArgSpec]) -> list[ArgInput]:
        return [
            ArgInput(
                spec,
                self._add(
                    f"{prefix}-{spec.key}",
                    forms.CharField(
                        required=False,
                        strip=False,
                        label=spec.key,
                        initial="" if spec.too_large else _shown_arg(spec),
                    ),
                ),
            )
            for spec in specs
        ]

    # -- turning answers into resume values --------------------------------------------

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        answers = {}
        for card in self.cards:
            try:
                answers[card.id] = self._value(card, cleaned)
            except forms.ValidationError as exc:
                self.add_error(None, exc)  # a {field: message} error lands on its field
        if self.errors:
            return cleaned
        if len(answers) == 1:
            self.resume_args = {"value": next(iter(answers.values()))}
        else:
            self.resume_args = {"answers": answers}
        return cleaned

    def _value(self, card: Card, cleaned) -> Any:
        if card.kind == interrupts.HITL:
            return {"decisions": [self._decision(card.id, a, cleaned) for a in card.actions]}
        if card.kind == interrupts.HUMAN:
            return [self._human_response(card, cleaned)]
        return self._answer(card, cleaned)

    def _answer(self, card: Card, cleaned):
        key = card.answer.name
        if card.typed is not None and not cleaned.get(key):
            answer = card.typed.value(cleaned)
        else:
            answer = field_error(key, parse_json, cleaned[key], "The answer is")
        try:
            checks.check_response_schema(card.interrupt, answer, key)
        except engine.InvalidRequest as exc:
            if card.typed is not None and not cleaned.get(key):
                error = checks.schema_error(answer, card.schema)
                key = card.typed.name_at(error.absolute_path if error else ()) or key
            raise error_on(key, exc.message) from None
        return answer

    def _decision(self, iid: str, card: ActionCard, cleaned) -> dict:
        action = card.action
        kind = cleaned[card.decision.name]
        decision = {"type": kind}
        if kind == "reject":
            if message := cleaned.get(card.message.name, "").strip():
                decision["message"] = message
        elif kind == "edit":
            args = self._hitl_args(card, cleaned)
            if args == action.args and "approve" in action.allowed:
                decision = {"type": "approve"}  # an edit that changes nothing approves
            else:
                decision["edited_action"] = {"name": action.name, "args": args}
        return decision

    def _hitl_args(self, card: ActionCard, cleaned) -> dict:
        schema = card.action.args_schema
        if card.inputs and any(i.field.html_name in self.data for i in card.inputs):
            args = self._edited(card.action.args, card.inputs)
            names = {i.spec.key: i.field.html_name for i in card.inputs}
            _check_args(args, schema, names, fallback=None)
            return args
        key = card.args.name
        if card.args_too_large and not cleaned.get(key):
            raise error_on(key, "These arguments are too large to edit here.")
        args = field_error(key, parse_json, cleaned.get(key) or "", "The arguments are")
        args = restore(args, card.action.args)
        if not isinstance(args, dict):
            raise error_on(key, "The arguments must be a JSON object.")
        _check_args(args, schema, {}, fallback=key)
        return args

    def _human_response(self, card: Card, cleaned) -> dict:
        request = card.human
        kind = cleaned[card.response.name]
        if kind == "response":
            text = cleaned.get(card.text.name, "")
            if not text:
                raise error_on(card.text.name, "Write the response to send.")
            return {"type": "response", "args": text}
        if kind == "edit":
            args = self._edited(request.args, card.inputs)
            if args != request.args or "accept" not in request.allowed:
                return {"type": "edit", "args": {"action": request.action, "args": args}}
            kind = "accept"  # an edit that changes nothing accepts
        if kind == "accept":
            return {"type": "accept", "args": request.action_request}
        return {"type": "ignore", "args": None}

    def _edited(self, original: dict, inputs: list[ArgInput]) -> dict:
        """``original`` with each submitted argument input applied. Raises a
        ``ValidationError`` with the error of each input at fault, on that input."""
        args = dict(original)
        errors = {}
        for arg in inputs:
            name = arg.field.html_name
            if name not in self.data:
                continue
            if self.data[name] == MASK:
                continue  # shown masked and sent back unchanged: the value stays
            try:
                value = _parse_arg(arg.spec, self.data[name])
            except forms.ValidationError as exc:
                errors[name] = exc.messages[0]
                continue
            if value is _OMIT:
                args.pop(arg.spec.key, None)
            elif arg.spec.key in original:
                args[arg.spec.key] = restore(value, original[arg.spec.key])
            else:
                args[arg.spec.key] = value
        if errors:
            raise forms.ValidationError(errors)
        return args


# Decisions this form can make; "respond" (the human acting as the tool) is not offered yet.
SUPPORTED_DECISIONS = ("approve", "edit", "reject")
_OMIT = object()


def _shown_arg(spec: interrupts.ArgSpec) -> str:
    """What an argument's input starts with: its value, or ``MASK`` for a sensitive one
    (``durable.redaction``)."""
    shown = redact_under(spec.key, spec.initial)
    if shown == spec.initial:
        return spec.initial_text
    if shown == MASK:
        return MASK
    return json.dumps(shown, indent=2, ensure_ascii=False)


def _parse_arg(spec: interrupts.ArgSpec, text: str) -> Any:
    """The value typed into ``spec``'s input; ``_OMIT`` for an empty input of an
    argument that is not text, or of a text argument the request did not have. A
    required argument (``spec.required``) left empty or blank is refused."""
    if "\x00" in text:
        raise forms.ValidationError(nul_message(spec.key))
    if spec.required and not text.strip():
        raise forms.ValidationError(f"{spec.key} is required: an edit cannot leave it empty.")
    if spec.kind in ("string", "text", "choice"):
        if spec.kind == "choice" and text and text not in spec.choices:
            raise forms.ValidationError(f"Choose one of: {', '.join(spec.choices)}.")
        return _OMIT if text == "" and spec.initial is None else text
    if not text.strip():
        return _OMIT
    value = parse_json(text, f"{spec.key} is")
    if spec.kind == "boolean" and not isinstance(value, bool):
        raise forms.ValidationError(f"{spec.key} must be true or false.")
    if spec.kind in ("number", "integer") and (
        isinstance(value, bool) or not isinstance(value, (int, float))
    ):
        raise forms.ValidationError(f"{spec.key} must be a number.")
    if spec.kind == "integer" and not isinstance(value, int):
        raise forms.ValidationError(f"{spec.key} must be a whole number.")
    return value


def _check_args(args: dict, schema: dict | None, names: dict, fallback: str | None) -> None:
    """Edited arguments against the action's ``args_schema``. The error lands on the
    input of the argument at fault (``names``: argument -> field), else on
    ``fallback`` (``None``: the form)."""
    error = checks.schema_error(args, schema) if schema is not None else None
    if error is None:
        return
    path = list(error.absolute_path)
    missing = [k for k in schema.get("required") or () if k not in args and k in names]
    key = missing[0] if missing else (path[0] if path and path[0] in names else None)
    where = "/".join(str(p) for p in path) or "the arguments"
    message = f"Does not match the action's args_schema at {where}: {error.message}."
    target = names[key] if key is not None else fallback
    if target is None:
        raise forms.ValidationError(message)
    raise error_on(target, message)
