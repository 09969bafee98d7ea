"""The Operations page's GET parameters: its window and, for a staff auditor, whether it
counts every tenant."""

from __future__ import annotations

from django import forms

from durable.reports.figures import WINDOWS


class OperationsForm(forms.Form):
    """``?window=hour|day|week`` (default ``hour``) and ``?tenants=all`` (auditors only:
    ``may_see_all`` says whether the request may)."""

    window = forms.ChoiceField(
        choices=[(name, f"last {name}") for name in WINDOWS], required=False, label="window"
    )
    tenants = forms.ChoiceField(
        choices=[("", "this tenant"), ("all", "all tenants")], required=False, label="tenants"
    )

    def __init__(self, data, may_see_all: bool):
        super().__init__(data)
        self.may_see_all = may_see_all

    def clean_window(self) -> str:
        return self.cleaned_data["window"] or "hour"

    def clean_tenants(self) -> str:
        value = self.cleaned_data["tenants"]
        if value and not self.may_see_all:
            raise forms.ValidationError("Only a staff auditor may count every tenant.")
        return value
