"""Forms of the console. Each error names the field it is about."""

from __future__ import annotations

import json

from django import forms

from dashboard import interrupts
from durable.graphs import graph_names


class StartRunForm(forms.Form):
    graph = forms.CharField(max_length=100)
    input = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}), initial="{}")

    def clean_graph(self):
        name = self.cleaned_data["graph"]
        if name not in graph_names():
            raise forms.ValidationError(
                f"Unknown graph {name!r}. Registered graphs: {', '.join(graph_names())}."
            )
        return name

    def clean_input(self):
        return _parse_json(self.cleaned_data["input"], "input")


class ResumeForm(forms.Form):
    """One form answering every pending interrupt of a thread.

    For each interrupt ``i`` (with id ``iid``): a ``HITLRequest`` contributes a
    ``decision-<iid>-<n>`` choice per action (and an optional ``message-<iid>-<n>`` for a
    rejection); any other payload contributes an ``answer-<iid>`` JSON text. After
    validation ``resume_args`` holds the keyword arguments for ``durable.runs.resume``.
    """

    def __init__(self, pending, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.pending = pending
        for item in pending:
            if interrupts.kind_of(item.value) == interrupts.HITL:
                for action in interrupts.hitl_actions(item.value):
                    self.fields[f"decision-{item.id}-{action.index}"] = forms.ChoiceField(
                        label=f"Decision for {action.name}",
                        choices=[(d, d) for d in action.allowed if d in ("approve", "reject")],
                        error_messages={
                            "required": f"Choose a decision for {action.name}.",
                            "invalid_choice": "%(value)s is not allowed for "
                            + action.name.replace("%", "%%")
                            + ".",
                        },
                    )
                    self.fields[f"message-{item.id}-{action.index}"] = forms.CharField(
                        required=False, label="Reason (sent with a rejection)"
                    )
            else:
                self.fields[f"answer-{item.id}"] = forms.CharField(
                    label="Answer (JSON)",
                    widget=forms.Textarea(attrs={"rows": 4}),
                    error_messages={"required": "Enter an answer as JSON."},
                )

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        answers = {}
        for item in self.pending:
            if interrupts.kind_of(item.value) == interrupts.HITL:
                answers[item.id] = {"decisions": self._decisions(item, cleaned)}
            else:
                key = f"answer-{item.id}"
                try:
                    answers[item.id] = _parse_json(cleaned[key], "answer")
                except forms.ValidationError as exc:
                    self.add_error(key, exc)
        if len(answers) == 1:
            self.resume_args = {"value": next(iter(answers.values()))}
        else:
            self.resume_args = {"answers": answers}
        return cleaned

    def _decisions(self, item, cleaned) -> list[dict]:
        decisions = []
        for action in interrupts.hitl_actions(item.value):
            decision = {"type": cleaned[f"decision-{item.id}-{action.index}"]}
            message = cleaned.get(f"message-{item.id}-{action.index}", "").strip()
            if decision["type"] == "reject" and message:
                decision["message"] = message
            decisions.append(decision)
        return decisions


def _parse_json(text: str, name: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise forms.ValidationError(f"The {name} is not valid JSON: {exc}.") from None
