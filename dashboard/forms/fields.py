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
        error_messages={"required": required_message, **reason_errors()},
    )


def reason_errors() -> dict:
    """``error_messages`` of every reason box (an action's reason, a rejection's), each
    naming the field: a form's errors can show away from the box they are about."""
    return {
        **no_nul("reason"),
        "max_length": "reason: at most %(limit_value)d characters (it has %(show_value)d).",
    }


def nul_message(name: str) -> str:
    """What an operator is told of a NUL character in the text of ``name``: it cannot be
    stored (PostgreSQL refuses it in text and jsonb)."""
    return f"{name}: contains a NUL character (\\u0000), which cannot be stored; remove it."


def no_nul(name: str) -> dict:
    """``error_messages`` that name the field ``name`` when Django's
    ``ProhibitNullCharactersValidator`` (every ``CharField`` has it) refuses its text."""
    return {"null_characters_not_allowed": nul_message(name)}


def parse_json(text: str, subject: str):
    """``text`` parsed as JSON; ``subject`` starts the error ("The input is"). Raises
    ``ValidationError``."""
    try:
        return json.loads(text)
    except ValueError as exc:
        # JSONDecodeError, and a number of more digits than Python converts
        # (``sys.get_int_max_str_digits()``), which json.loads refuses as a ValueError.
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
