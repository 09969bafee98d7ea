"""Forms of the console. Each error names the field it is about."""

from __future__ import annotations

import json

from django import forms
from jsonschema import SchemaError
from jsonschema.validators import validator_for

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
        return _parse_json(self.cleaned_data["input"], "The input is")


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
                        choices=[(d, d) for d in action.allowed if d in SUPPORTED_DECISIONS],
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
                    if "edit" in action.allowed:
                        self.fields[f"args-{item.id}-{action.index}"] = forms.CharField(
                            required=False,
                            label="Arguments (JSON, sent with an edit)",
                            initial=json.dumps(action.args, indent=2),
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
            try:
                if interrupts.kind_of(item.value) == interrupts.HITL:
                    answers[item.id] = {"decisions": self._decisions(item, cleaned)}
                else:
                    answers[item.id] = self._answer(item, cleaned)
            except forms.ValidationError as exc:
                self.add_error(None, exc)  # a {field: message} error lands on its field
        if self.errors:
            return cleaned
        if len(answers) == 1:
            self.resume_args = {"value": next(iter(answers.values()))}
        else:
            self.resume_args = {"answers": answers}
        return cleaned

    def _answer(self, item, cleaned):
        key = f"answer-{item.id}"
        answer = _field_error(key, _parse_json, cleaned[key], "The answer is")
        schema = item.value.get("response_schema") if isinstance(item.value, dict) else None
        if isinstance(schema, dict):
            _field_error(key, _check_schema, answer, schema)
        return answer

    def _decisions(self, item, cleaned) -> list[dict]:
        decisions = []
        for action in interrupts.hitl_actions(item.value):
            kind = cleaned[f"decision-{item.id}-{action.index}"]
            decision = {"type": kind}
            if kind == "reject":
                if message := cleaned.get(f"message-{item.id}-{action.index}", "").strip():
                    decision["message"] = message
            elif kind == "edit":
                key = f"args-{item.id}-{action.index}"
                args = _field_error(key, _parse_json, cleaned.get(key) or "", "The arguments are")
                if not isinstance(args, dict):
                    raise _error_on(key, "The arguments must be a JSON object.")
                if args == action.args and "approve" in action.allowed:
                    decision = {"type": "approve"}  # an edit that changes nothing approves
                else:
                    decision["edited_action"] = {"name": action.name, "args": args}
            decisions.append(decision)
        return decisions


# Decisions this form can make; "respond" (the human acting as the tool) is not offered yet.
SUPPORTED_DECISIONS = ("approve", "edit", "reject")


def _error_on(field: str, message: str) -> forms.ValidationError:
    return forms.ValidationError({field: message})


def _field_error(field: str, check, *args):
    """Run ``check``; re-raise its ValidationError as an error on ``field``."""
    try:
        return check(*args)
    except forms.ValidationError as exc:
        raise _error_on(field, exc.messages[0]) from None


def _check_schema(answer, schema: dict) -> None:
    try:
        validator = validator_for(schema)(schema)
        validator.check_schema(schema)
    except SchemaError:
        return  # the graph's schema is broken: nothing to check the answer against
    if error := next(iter(validator.iter_errors(answer)), None):
        where = "/".join(str(p) for p in error.absolute_path) or "the answer"
        raise forms.ValidationError(
            f"The answer does not match the interrupt's response_schema at {where}: "
            f"{error.message}."
        )


def _parse_json(text: str, subject: str):
    """``text`` parsed as JSON; ``subject`` starts the error ("The input is")."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise forms.ValidationError(f"{subject} not valid JSON: {exc}.") from None
    except RecursionError:
        raise forms.ValidationError(f"{subject} nested too deeply.") from None
