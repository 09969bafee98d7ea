"""The forms of the actions that change a thread: start a run, replay, close without an
answer (fork: ``dashboard.forms.fork``); and what an operator is told when
``durable.engine`` refuses one."""

from __future__ import annotations

import json

from django import forms
from django.forms import BoundField

from dashboard.forms.fields import parse_json, reason_field
from dashboard.forms.schema_form import SchemaFields
from durable import engine
from durable.graphs import example_input, graph_names


class GraphInputForm(forms.Form):
    """The input of a run of ``graph``: fields built from the graph's input JSON schema
    (``input.<key>``, ``dashboard.forms.schema_form``; no key required, as LangGraph
    takes a partial input), started with ``initial_input``; and the ``input`` box (JSON),
    which, when filled, is taken instead (without fields it is required). After
    validation ``cleaned_data["input"]`` is the input value. An unregistered ``graph``
    (or ``None``) gives the JSON box alone."""

    input = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6}),
        error_messages={"required": "Enter the input as JSON."},
    )

    def __init__(self, *args, graph: str | None = None, initial_input=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.typed = None
        self.example = json.dumps(initial_input or {}, ensure_ascii=False)
        schema = engine.input_schema(graph) if graph in graph_names() else None
        if schema is not None:
            typed = SchemaFields(
                self._add, "input", schema, initial=initial_input or {}, keys_optional=True
            )
            self.typed = typed if typed.usable else None
        if self.typed is None:
            self.fields["input"].required = True
            self.fields["input"].initial = json.dumps(
                initial_input or {}, indent=2, ensure_ascii=False
            )

    def _add(self, name: str, form_field: forms.Field) -> BoundField:
        self.fields[name] = form_field
        return self[name]

    def clean_input(self):
        text = self.cleaned_data["input"]
        return parse_json(text, "The input is") if text.strip() else None

    def clean(self):
        cleaned = super().clean()
        if self.typed is not None and not self.errors and cleaned.get("input") is None:
            try:
                cleaned["input"] = self.typed.value(cleaned)
            except forms.ValidationError as exc:
                self.add_error(None, exc)
        return cleaned

    @property
    def json_used(self) -> bool:
        """Whether the input came from the JSON box (else from the fields)."""
        return self.typed is None or bool(self.data.get("input", "").strip())

    def field_for(self, error_field: str) -> str | None:
        """The field an ``InvalidRequest`` about ``error_field`` lands on: the field of
        the key at fault (``input.employee``) when the fields were used and have it, else
        the JSON box for the input's errors (``None``: the form)."""
        if not error_field.startswith("input"):
            return None
        if self.json_used:
            return "input"
        return error_field if error_field in self.fields else None


class StartRunForm(GraphInputForm):
    """Start a run of a registered ``graph`` with its input (``GraphInputForm``); the
    fields are those of the graph posted, else of ``graph``."""

    graph = forms.CharField(max_length=100)
    field_order = ["graph", "input"]

    def __init__(self, *args, graph: str | None = None, **kwargs):
        data = args[0] if args else kwargs.get("data")
        if data is not None:
            graph = data.get("graph")
        initial = example_input(graph) if graph in graph_names() else None
        kwargs.setdefault("auto_id", f"{graph}-%s")  # a page has one form per graph
        super().__init__(*args, graph=graph, initial_input=initial, **kwargs)
        self.graph_name = graph

    def clean_graph(self):
        name = self.cleaned_data["graph"]
        if name not in graph_names():
            raise forms.ValidationError(
                f"Unknown graph {name!r}. Registered graphs: {', '.join(graph_names())}."
            )
        return name


def start_forms(form: StartRunForm) -> dict:
    """The start-run form of each graph (``start_forms``: ``{"graph", "form"}``), the
    submitted one keeping its input and errors; and the errors of a submission naming no
    registered graph (``orphan_errors``)."""
    submitted = form.data.get("graph") if form.is_bound else None
    per_graph = [
        {"graph": name, "form": form if submitted == name else StartRunForm(graph=name)}
        for name in graph_names()
    ]
    orphan_errors = form.errors if form.is_bound and submitted not in graph_names() else {}
    return {"start_forms": per_graph, "orphan_errors": orphan_errors}


class ReplayForm(forms.Form):
    """Replay from a checkpoint: only a reason."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["reason"] = reason_field("Say why you replay: the reason is kept with it.")


class CloseForm(forms.Form):
    """Close a thread without resuming it: LangGraph's ``update_state(None,
    as_node=END)`` on the checkpoint the operator saw (``checkpoint_id``)."""

    checkpoint_id = forms.CharField(widget=forms.HiddenInput, max_length=64)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["reason"] = reason_field("Say why the thread is closed without an answer.")


def refusal(exc, thread) -> str:
    """What to tell an operator whose request ``durable.engine`` refused (``exc``, an
    ``InvalidRequest``). A thread busy with another run is said in the console's words
    (the engine's message speaks to API clients, of ``multitask_strategy``): often
    another tab or operator acted first."""
    if exc.field == "thread" and thread is not None:
        active = engine.active_run(thread)
        if active is not None:
            return (
                f"Thread {thread.name!r} is busy: run {active.pk} ({active.kind}) is "
                f"{active.status}, perhaps started from another tab or by someone else. "
                "Look at that run; when it has ended, load this page again."
            )
    return exc.message
