"""The inbox's forms: what the queue shows (``InboxQuery``, GET) and one decision sent to
several interrupts of the same kind (``BulkAnswerForm``, POST)."""

from __future__ import annotations

from django import forms
from django.db.models import QuerySet
from django.utils.http import urlencode

from dashboard.forms.fields import REASON_MAX_LENGTH, no_nul, reason_errors
from durable.persistence.text import UnstorableText, check_text

NO_GRAPH = "no graph has this name."
SORTS = (
    ("graph", "by graph, oldest first"),
    ("oldest", "oldest waiting first"),
    ("newest", "newest waiting first"),
)
ORDERINGS = {
    "graph": ("graph", "waiting_since", "pk"),
    "oldest": ("waiting_since", "pk"),
    "newest": ("-waiting_since", "-pk"),
}


class InboxQuery(forms.Form):
    """``?graph=&action=&q=&sort=``: one graph's threads, those whose interrupt names
    ``action``, those whose payload contains ``q`` (any case), in the order ``sort``
    names (``SORTS``; by graph when not given)."""

    graph = forms.CharField(
        required=False,
        max_length=100,
        error_messages={"max_length": NO_GRAPH, "null_characters_not_allowed": NO_GRAPH},
    )
    action = forms.CharField(required=False, max_length=200, error_messages=no_nul("action"))
    q = forms.CharField(
        required=False,
        max_length=200,
        label="Payload contains",
        error_messages=no_nul("payload text"),
    )
    sort = forms.ChoiceField(required=False, choices=SORTS)

    def clean(self):
        cleaned = super().clean()
        for name in ("action", "q"):
            try:
                check_text(cleaned.get(name) or "", name)
            except UnstorableText as exc:
                self.add_error(name, str(exc))
        cleaned["sort"] = cleaned.get("sort") or "graph"
        return cleaned

    @property
    def ordering(self) -> tuple[str, ...]:
        return ORDERINGS[self.cleaned_data["sort"]]

    def query(self, **changes) -> str:
        """The page's query string with ``changes`` (``None`` drops a key), for links."""
        params = {k: v for k, v in self.cleaned_data.items() if v and k in self.fields}
        if params.get("sort") == "graph":
            del params["sort"]
        params.update(changes)
        return urlencode({k: v for k, v in params.items() if v})


BULK_DECISIONS = (("approve", "Approve / accept"), ("reject", "Reject / ignore"))


class BulkAnswerForm(forms.Form):
    """``threads`` (pks, among ``queryset``), all waiting on one interrupt of the same
    kind, answered with one ``decision``: ``approve`` (a HITL approve, an agent-inbox
    accept) or ``reject`` (a HITL reject with ``message`` as its reason, an agent-inbox
    ignore)."""

    threads = forms.ModelMultipleChoiceField(
        queryset=None,
        error_messages={
            "required": "threads: select at least one interrupt.",
            "invalid_choice": "threads: %(value)s is not a waiting thread here.",
            "invalid_pk_value": "threads: %(pk)s is not a thread id.",
        },
    )
    decision = forms.ChoiceField(
        choices=BULK_DECISIONS,
        error_messages={
            "required": "decision: choose approve or reject.",
            "invalid_choice": "decision: %(value)s is neither approve nor reject.",
        },
    )
    message = forms.CharField(
        required=False,
        max_length=REASON_MAX_LENGTH,
        label="Reason (sent with a rejection)",
        error_messages=reason_errors(),
    )

    def __init__(self, *args, queryset: QuerySet, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["threads"].queryset = queryset
