"""The fork form: a checkpoint's state keys edited as what they are, and the update they
make.

Each state key has a JSON box (``state-<key>``). A key whose state schema
(``durable.engine.state_schema``) is a string, a number, a boolean or an enum also has an
input of its type (``typed-<key>``, ``dashboard.forms.schema_form``), the JSON box then one
click away; a list of messages (``add_messages``) is a transcript whose messages' text can
be edited (``msg-<key>-<index>``): an edited message is sent with its own id, so
``add_messages`` replaces it where it is, as LangGraph Studio forks from an edited message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.forms import BoundField
from langgraph.constants import START

from dashboard.forms.fields import parse_json, reason_field
from dashboard.forms.schema_form import MISSING, SchemaFields
from dashboard.present import values
from durable.engine.checks import schema_error
from durable.redaction import redact, restore
from durable.values import is_message, jsonable

# The kinds of ``schema_form`` that a state key is edited as, rather than as JSON.
TYPED_KINDS = ("string", "text", "integer", "number", "boolean", "choice")
# What a message edited in the transcript keeps besides its type, text and id: what
# LangChain's message dicts carry through ``add_messages`` to the same field (the stored
# values, never the masks shown).
MESSAGE_KEEPS = ("name", "tool_call_id", "tool_calls", "additional_kwargs", "response_metadata")


class ForkForm(forms.Form):
    """Fork at a checkpoint: ``as_node`` (one of the graph's nodes, by default the
    first node that wrote the checkpoint; ``__start__`` for the input checkpoint, which
    no node wrote (``step`` -1), as LangGraph's ``update_state`` infers there), a
    ``reason``, ``run_after``, and per state key a JSON box ``state-<key>``, with a
    typed input or a transcript where the state schema (``schema``: ``{key: JSON
    schema}``) allows.

    A key whose channel replaces its value starts with the value at the checkpoint;
    a key whose channel combines updates with a reducer starts empty (what is written
    there is added, as the graph's own nodes add to it). Only keys whose value changed
    are sent (an empty box keeps its key as it is), so values the console cannot show
    as JSON stay as they are; a JSON box changed wins over its key's typed input. After
    validation ``values`` is ``{key: value}`` of the changed keys, or ``None`` when none
    changed (the update then only counts as ``as_node``).

    Sensitive values (``durable.redaction``) start masked, and a mask sent back where
    the form showed it keeps the stored value: the mask is never written."""

    as_node = forms.ChoiceField(
        label="Update as node (as_node)",
        error_messages={
            "required": "Choose the node this update counts as.",
            "invalid_choice": "as_node: %(value)s is not a node of this graph.",
        },
    )
    run_after = forms.BooleanField(
        required=False, initial=True, label="Run the graph from the fork at once"
    )

    def __init__(
        self,
        shape,
        current: dict,
        writers: list[str],
        *args,
        migration=None,
        schema: dict | None = None,
        step: int | None = None,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.fields["reason"] = reason_field("Say why you fork: the reason is kept with it.")
        self.fields["as_node"].choices = [("", "Choose a node")] + [(n, n) for n in shape.nodes]
        # No node wrote the thread's input checkpoint (step -1), and no node has seen a
        # channel there: LangGraph's update_state, given no as_node, counts the update
        # as the graph's input node.
        first = START if step == -1 and START in shape.nodes else ""
        self.fields["as_node"].initial = next((w for w in writers if w in shape.nodes), first)
        prefill = migration.values if migration else {}
        # What the form's own first values change (a migration's), before any edit.
        self.initial_values = dict(prefill) or None
        if migration:
            self.fields["as_node"].initial = migration.as_node or ""
            self.fields["reason"].initial = f"Migrate to {migration.version.name}"
        self.shape = shape
        self.current = current
        self.schema = schema or {}
        self.keys: list[StateKey] = []
        # The field each changed key's value came from, where its errors are shown.
        self.sources: dict[str, str] = {}
        shown = redact(current)
        for key in shape.state_keys:
            combined = key in shape.combined_keys
            start = (
                ""
                if combined or key not in current
                else json.dumps(shown[key], indent=2, ensure_ascii=False)
            )
            if key in prefill:
                start = json.dumps(prefill[key], indent=2, ensure_ascii=False)
            too_large = len(start) > values.EDIT_LIMIT
            self.fields[f"state-{key}"] = forms.CharField(
                required=False,
                strip=False,
                initial="" if too_large else start,
                label=key,
                widget=forms.Textarea,
            )
            state_key = StateKey(key, combined, key in current, self[f"state-{key}"], len(start))
            if not too_large and key not in prefill:
                if combined:
                    state_key.transcript = self._transcript(key, shown.get(key), current.get(key))
                elif key in current:
                    state_key.typed = self._typed(key, (schema or {}).get(key), shown[key])
            self.keys.append(state_key)

    def _add(self, name: str, form_field: forms.Field) -> BoundField:
        self.fields[name] = form_field
        return self[name]

    def _typed(self, key: str, schema: Any, value: Any):
        """The typed input of plain key ``key`` (a ``schema_form.Node``), or ``None``
        when its schema is no scalar or its value does not fit it."""
        if not isinstance(schema, dict) or not schema:
            return None
        fields = SchemaFields(self._add, f"typed-{key}", {**schema, "title": key}, initial=value)
        node = fields.root
        if node.kind not in TYPED_KINDS or node.field.initial in ("", None):
            self.fields.pop(f"typed-{key}", None)
            return None
        node.required = False  # left empty, the key is kept as it is
        return fields

    def _transcript(self, key: str, value: Any, stored: Any) -> list[Message]:
        """The messages of ``key`` whose text can be edited, when ``value`` (as shown,
        masked; ``stored``: as stored) is a list of messages that all have ids (else
        ``[]``)."""
        if not isinstance(value, list) or not value:
            return []
        if not all(is_message(m) and m.get("id") for m in value):
            return []
        # As the inspector shows them: a message's tool calls (name, id, args), read-only.
        presented = values.as_messages(value)
        transcript = []
        for i, message in enumerate(value):
            name = f"msg-{key}-{i}"
            editable = isinstance(message["content"], str)
            if editable:
                self.fields[name] = forms.CharField(
                    required=False, strip=False, initial=message["content"], label=message["type"]
                )
            transcript.append(
                Message(
                    message,
                    stored[i],
                    self[name] if editable else None,
                    presented[i].tool_calls,
                )
            )
        return transcript

    def field_for(self, error_field: str) -> str | None:
        """The form field an ``InvalidRequest`` field maps to (``None``: the form). An
        update the graph could not apply (``values``) lands on the field of the state key
        at fault (``values.x``: key ``x``; text the database cannot hold there too), or,
        when only one key was changed, on that key's field, since it is then the one at
        fault."""
        error_field, _, key = error_field.partition(".")
        key = key.partition(".")[0].partition("[")[0]
        if error_field == "values" and key in self.sources:
            return self.sources[key]
        if error_field == "values" and f"state-{key}" in self.fields:
            return f"state-{key}"
        if error_field == "as_node":
            return "as_node"
        if error_field == "values" and self.values and len(self.values) == 1:
            return self.sources.get(next(iter(self.values)))
        return None

    def clean(self):
        cleaned = super().clean()
        unknown = sorted(
            name.removeprefix("state-")
            for name in self.data
            if name.startswith("state-") and name not in self.fields
        )
        if unknown:
            keys = ", ".join(unknown)
            self.add_error(
                None,
                f"The state of this graph has no key {keys}; its keys are "
                f"{', '.join(k.key for k in self.keys)}.",
            )
        changed = {}
        for key in self.keys:
            try:
                value, source = self._changed(key, cleaned)
            except forms.ValidationError as exc:
                self.add_error(None, exc)
                continue
            if value is not MISSING:
                changed[key.key] = value
                self.sources[key.key] = source
        self.values = changed or None
        return cleaned

    def _changed(self, key: StateKey, cleaned: dict) -> tuple[Any, str]:
        """``(value, field)``: what ``key`` is updated with and the field it came from,
        or ``(MISSING, "")`` when it is kept as it is. Raises ``ValidationError({field:
        message})``."""
        name = key.field.name
        text = cleaned.get(name, "")
        if text.strip():
            value = parse_json_on(name, text, f"{key.key}: the value is")
            if key.present:
                value = restore(value, self.current[key.key])
            if key.combined or not key.present or value != self.current[key.key]:
                self._check_schema(key, value, name)
                return value, name
        if key.typed is not None and key.typed.root.name in self.data:
            typed_name = key.typed.root.name
            if cleaned.get(typed_name) in ("", None):
                return MISSING, ""  # left empty, or its own error is on its field
            value = key.typed.value(cleaned)
            value = restore(value, self.current[key.key])
            if value is not None and value != self.current[key.key]:
                return value, typed_name
        edited = [m.edited(self.data) for m in key.transcript]
        edited = [m for m in edited if m is not None]
        if edited:
            first = next(m for m in key.transcript if m.edited(self.data) is not None)
            return edited, first.field.name
        return MISSING, ""

    def _check_schema(self, key: StateKey, value: Any, name: str) -> None:
        """A plain key's value typed as JSON against the key's state schema, as its typed
        input is checked (and as ``durable.engine.fit`` finds a value the schema
        refuses): raises ``ValidationError({name: message})``. A reducer key's box adds
        to the key rather than replacing it, so its schema is not the update's."""
        schema = self.schema.get(key.key)
        if key.combined or not isinstance(schema, dict) or not schema:
            return
        error = schema_error(jsonable(value), schema)
        if error is not None:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.path)
            message = (
                f"{key.key}{where}: the state schema refuses this value: {error.message[:200]}."
            )
            raise forms.ValidationError({name: message})


def parse_json_on(name: str, text: str, subject: str) -> Any:
    """``parse_json``, its error on field ``name``."""
    try:
        return parse_json(text, subject)
    except forms.ValidationError as exc:
        raise forms.ValidationError({name: exc.messages[0]}) from None


@dataclass
class Message:
    """One message of a transcript: ``message`` as JSON and shown (``type``,
    ``content``, ``id`` ..., masked), ``stored`` as stored, ``field``, its text's
    input (``None``: its content is no text), and ``tool_calls``, the tools an AI message
    calls (``dashboard.present.values.ToolCall``, shown, not edited: an edited text keeps
    them)."""

    message: dict
    stored: dict
    field: BoundField | None
    tool_calls: list = field(default_factory=list)

    def edited(self, data) -> dict | None:
        """The message to send when its text was changed in ``data``: its type, new
        text and own id (``add_messages`` then replaces it); else ``None``."""
        if self.field is None or self.field.html_name not in data:
            return None
        text = data[self.field.html_name]
        if text == self.message["content"]:
            return None
        sent = {"type": self.message["type"], "content": text, "id": self.message["id"]}
        sent.update({k: self.stored[k] for k in MESSAGE_KEEPS if self.stored.get(k)})
        return sent


@dataclass
class StateKey:
    """One state key on the fork form: ``combined`` when its channel has a reducer,
    ``present`` when the checkpoint has a value for it; ``too_large`` when the value
    is too long to put in the form. ``typed``: its typed input (``SchemaFields``) or
    ``None``; ``transcript``: its messages, when it is a list of them."""

    key: str
    combined: bool
    present: bool
    field: BoundField
    # The length of the value as JSON text; past ``values.EDIT_LIMIT`` the box starts
    # empty (which keeps the value) rather than carry it.
    size: int = 0
    typed: SchemaFields | None = None
    transcript: list[Message] = field(default_factory=list)

    @property
    def too_large(self) -> bool:
        return self.size > values.EDIT_LIMIT
