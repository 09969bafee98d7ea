"""The tenant's settings form: what a tenant admin sets on the console."""

from __future__ import annotations

from django import forms

from dashboard.forms.fields import REASON_MAX_LENGTH, reason_errors
from durable.models import Tenant


class TenantSettingsForm(forms.ModelForm):
    """``overdue_after`` (a duration: ``1 00:00:00`` for a day, ``02:00:00`` for two
    hours, or ISO 8601 ``PT2H``; the model's bounds apply) and an optional ``reason``,
    kept in the audit trail with the change."""

    reason = forms.CharField(
        label="Reason (optional)",
        required=False,
        max_length=REASON_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages=reason_errors(),
    )

    class Meta:
        model = Tenant
        fields = ["overdue_after"]
        labels = {"overdue_after": "Overdue after"}
        help_texts = {
            "overdue_after": (
                "An interrupt waiting longer than this is marked overdue in the inbox. "
                "Days hours:minutes:seconds: 1 00:00:00 for a day, 02:00:00 for two "
                "hours, 00:05:00 for five minutes; or ISO 8601 PT2H. A bare number is "
                "seconds. At least 1 second."
            )
        }
        error_messages = {
            "overdue_after": {
                "required": "Overdue after is required (e.g. 1 00:00:00 for a day).",
                "invalid": (
                    "Overdue after must be a duration: 1 00:00:00 for a day, 02:00:00 "
                    "for two hours, or PT2H."
                ),
                "overflow": "Overdue after is too long.",
            }
        }
