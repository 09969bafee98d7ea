"""The form of a new cron on the Crons page; the engine checks what it means
(``durable.engine.crons``), and its refusals land on the field they name."""

from __future__ import annotations

from django import forms

from dashboard.forms.fields import no_nul, parse_json
from durable.engine.checks import InvalidRequest
from durable.engine.crons import check_schedule, check_timezone

# The engine's field names, as this form names them.
FIELDS = {
    "graph": "assistant_id",
    "assistant_id": "assistant_id",
    "schedule": "schedule",
    "timezone": "timezone",
    "end_time": "end_time",
    "input": "input",
    "on_run_completed": "on_run_completed",
}


class CronForm(forms.Form):
    """A cron on a new thread per fire: the assistant (the engine resolves it), a
    five-field ``schedule`` read in ``timezone``, an optional ``end_time`` (UTC), the
    run's ``input`` (JSON) and what becomes of each fire's thread."""

    assistant_id = forms.CharField(
        label="Assistant",
        max_length=100,
        help_text="A registered graph's name, or a stored assistant's id.",
        error_messages=no_nul("assistant_id"),
    )
    schedule = forms.CharField(
        max_length=200,
        initial="0 9 * * 1-5",
        help_text="Five fields: minute hour day-of-month month day-of-week.",
        error_messages=no_nul("schedule"),
    )
    timezone = forms.CharField(max_length=64, initial="UTC", error_messages=no_nul("timezone"))
    end_time = forms.DateTimeField(
        label="End time (UTC, optional)",
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
    )
    input = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), initial="{}")
    on_run_completed = forms.ChoiceField(
        label="After each run",
        choices=[("delete", "delete its thread"), ("keep", "keep its thread")],
        initial="delete",
    )

    # The engine's own checks, here too, so that each field says what is wrong with it
    # at once: the engine stops at the first refusal, and a form of two bad fields
    # would show one error, then the other after it was corrected.
    def clean_schedule(self):
        return self._checked(check_schedule, "schedule")

    def clean_timezone(self):
        return self._checked(check_timezone, "timezone")

    def _checked(self, check, name: str):
        try:
            return check(self.cleaned_data[name])
        except InvalidRequest as exc:
            raise forms.ValidationError(exc.message) from None

    def clean_input(self):
        return parse_json(self.cleaned_data["input"], "The input is")

    def refused(self, exc) -> None:
        """Put the engine's refusal (``InvalidRequest``) on the field it names."""
        self.add_error(FIELDS.get(exc.field), exc.message)
