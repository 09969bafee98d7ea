"""What the console's forms share: JSON typed into a box, the required reason of an
action, and errors aimed at the field they are about."""

from __future__ import annotations

import json

from django import forms

REASON_MAX_LENGTH = 500


def reason_field(required_message: str) -> forms.CharField:
    """The reason an operator gives for an action, kept with what it does;
    ``required_message`` says why it is needed."""
    return forms.CharField(
        label="Reason (required)",
        max_length=REASON_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={"required": required_message},
    )


def parse_json(text: str, subject: str):
    """``text`` parsed as JSON; ``subject`` starts the error ("The input is"). Raises
    ``ValidationError``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise forms.ValidationError(f"{subject} not valid JSON: {exc}.") from None
    except RecursionError:
        raise forms.ValidationError(f"{subject} nested too deeply.") from None


def error_on(field: str, message: str) -> forms.ValidationError:
    """An error that ``Form.add_error(None, error)`` puts on ``field``."""
    return forms.ValidationError({field: message})


def field_error(field: str, check, *args):
    """``check(*args)``, its ``ValidationError`` re-raised as an error on ``field``."""
    try:
        return check(*args)
    except forms.ValidationError as exc:
        raise error_on(field, exc.messages[0]) from None
