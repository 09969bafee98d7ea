"""The forms of the GET parameters that say what a page shows: which page of the threads
list, which part of a checkpoint tree, which checkpoint, namespace or state key, which
graph. A page with bad parameters lists them with ``form_errors``."""

from __future__ import annotations

from django import forms

from dashboard.paging import SORTS, parse_cursor

CHECKPOINT_ID_MAX_LENGTH = 64
NS_MAX_LENGTH = 2000


class PageForm(forms.Form):
    """Sort order and keyset cursors: ``after`` (the next page) or ``before`` (the
    previous one), each ``<updated_at in µs since the epoch>-<pk>`` of a row
    (``dashboard.paging``)."""

    sort = forms.ChoiceField(choices=list(SORTS.items()), required=False)
    after = forms.CharField(required=False, max_length=64)
    before = forms.CharField(required=False, max_length=64)

    def clean_after(self):
        return parse_cursor(self.cleaned_data["after"])

    def clean_before(self):
        return parse_cursor(self.cleaned_data["before"])

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("after") and cleaned.get("before"):
            raise forms.ValidationError("Give either after or before, not both.")
        return cleaned


class TreeForm(forms.Form):
    """Where a tree page starts: ``before`` / ``after`` a checkpoint id, in namespace
    ``ns``."""

    before = forms.CharField(required=False, max_length=CHECKPOINT_ID_MAX_LENGTH)
    after = forms.CharField(required=False, max_length=CHECKPOINT_ID_MAX_LENGTH)
    ns = forms.CharField(required=False, max_length=NS_MAX_LENGTH, strip=False)


class NamespaceForm(forms.Form):
    """``?ns=``: the checkpoint namespace (a subgraph's) a page reads; empty for the
    graph itself."""

    ns = forms.CharField(required=False, max_length=NS_MAX_LENGTH, strip=False)


class DiffForm(NamespaceForm):
    """The two checkpoints to compare: ``a`` (before) and ``b`` (after)."""

    a = forms.CharField(
        max_length=CHECKPOINT_ID_MAX_LENGTH,
        label="Checkpoint A",
        error_messages={"required": "Pick checkpoint A."},
    )
    b = forms.CharField(
        max_length=CHECKPOINT_ID_MAX_LENGTH,
        label="Checkpoint B",
        error_messages={"required": "Pick checkpoint B."},
    )


class RevealForm(NamespaceForm):
    """The one masked value to reveal: its dotted ``path`` in the state
    (``durable.redaction.masked_paths``)."""

    path = forms.CharField(max_length=1000, strip=False)


class JsonForm(NamespaceForm):
    """``?key=``: the one state value to download whole; empty for the whole checkpoint."""

    key = forms.CharField(required=False, max_length=1000, strip=False)


class PictureForm(forms.Form):
    """``?checkpoint=``: the checkpoint whose next nodes the graph's picture marks; empty
    for the thread's latest."""

    checkpoint = forms.CharField(required=False, max_length=CHECKPOINT_ID_MAX_LENGTH)


class GraphForm(forms.Form):
    """``?graph=``: the inbox keeps one graph's threads."""

    graph = forms.CharField(required=False, max_length=100)


def form_errors(form: forms.Form) -> list[tuple[str, str]]:
    """``[(label, message)]`` of a bound form, field errors labelled by their field."""
    found = []
    for name, messages in form.errors.items():
        label = form.fields[name].label or name if name in form.fields else ""
        found.extend((str(label), str(m)) for m in messages)
    return found
