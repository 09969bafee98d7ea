"""``?checkpoint_id=``: the checkpoint of the new branch the divergence page compares
with the branch it left; empty for the thread's newest checkpoint."""

from __future__ import annotations

from django import forms

from dashboard.forms.queries import CHECKPOINT_ID_MAX_LENGTH


class DivergenceForm(forms.Form):
    checkpoint_id = forms.CharField(
        required=False,
        max_length=CHECKPOINT_ID_MAX_LENGTH,
        label="Checkpoint of the new branch",
        help_text="Empty: the thread's newest checkpoint.",
    )
