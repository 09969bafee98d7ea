"""The forms of the Assistants page: an assistant's fields (its config, context and
metadata typed as JSON), the version to make its latest, the two versions to compare."""

from __future__ import annotations

import json

from django import forms

from dashboard.forms.actions import GraphInputForm
from dashboard.forms.fields import no_nul, parse_json
from durable.graphs import example_input, graph_names
from durable.models import NAME_MAX_LENGTH
from durable.redaction import redact, restore

# What an engine refusal names (``durable.engine.stored_assistants``), by the form field
# it is shown on: a path below config (``config.configurable.user``) on ``config``.
_FIELDS = ("graph_id", "name", "description", "config", "context", "metadata")


def _pretty(value) -> str:
    return json.dumps(value if value is not None else {}, indent=2, ensure_ascii=False)


class AssistantForm(forms.Form):
    """An assistant's fields: ``graph_id`` (a registered graph), ``name``,
    ``description``, and ``config``, ``context`` and ``metadata`` as JSON objects. The
    graph's config schema checks ``config`` when the engine stores it
    (``field_for`` says which field its refusal goes on)."""

    graph_id = forms.ChoiceField(label="Graph")
    name = forms.CharField(max_length=NAME_MAX_LENGTH, error_messages=no_nul("name"))
    description = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages=no_nul("description"),
    )
    config = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6}),
        initial="{}",
        help_text='{"configurable": {...}, "recursion_limit": 25, "tags": [...]}',
    )
    context = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 4}), initial="{}"
    )
    metadata = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), initial="{}"
    )

    def __init__(self, data=None, *, assistant=None):
        initial = None
        if assistant is not None:
            initial = {
                "graph_id": assistant.graph_id,
                "name": assistant.name,
                "description": assistant.description or "",
                # Masked (``durable.redaction``); a mask sent back keeps the value.
                "config": _pretty(redact(assistant.config)),
                "context": _pretty(redact(assistant.context)),
                "metadata": _pretty(redact(assistant.metadata)),
            }
        super().__init__(data, initial=initial)
        self.assistant = assistant
        self.fields["graph_id"].choices = [(n, n) for n in graph_names()]

    def _object(self, name: str) -> dict:
        text = self.cleaned_data[name].strip() or "{}"
        value = parse_json(text, f"The {name} is")
        if not isinstance(value, dict):
            raise forms.ValidationError(f"The {name} must be a JSON object.")
        if self.assistant is not None:
            value = restore(value, getattr(self.assistant, name))
        return value

    def clean_config(self):
        return self._object("config")

    def clean_context(self):
        return self._object("context")

    def clean_metadata(self):
        return self._object("metadata")

    def clean_description(self):
        return self.cleaned_data["description"] or None

    @staticmethod
    def field_for(engine_field: str) -> str | None:
        """The form field an engine refusal naming ``engine_field`` is shown on."""
        head = engine_field.split(".", 1)[0]
        return head if head in _FIELDS else None


class LatestForm(forms.Form):
    """The version to make an assistant's latest."""

    version = forms.IntegerField(min_value=1, error_messages={"required": "Pick a version."})


class VersionDiffForm(forms.Form):
    """``?a=&b=``: the two versions of an assistant to compare."""

    a = forms.IntegerField(min_value=1, label="Version A")
    b = forms.IntegerField(min_value=1, label="Version B")


class AssistantRunForm(GraphInputForm):
    """Start a run on an assistant of graph ``graph``: the graph's input
    (``GraphInputForm``), started with the graph's example input."""

    def __init__(self, *args, graph: str, **kwargs):
        initial = example_input(graph) if graph in graph_names() else None
        super().__init__(*args, graph=graph, initial_input=initial, **kwargs)
