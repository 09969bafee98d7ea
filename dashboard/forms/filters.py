"""What the list pages are filtered by: the threads list (django-filter), the audit trail
(django-filter) and the store browser (its filter text).

Every filter is a GET parameter, so a filtered list is a link:
``?status=interrupted&graph=expense_approval&meta=team=ops&meta=priority=2&diagnosis=failed
&overdue=on&updated_after=2026-11-01T00:00&q=invoice&sort=-updated&after=<cursor>``.
Bad input is a form error naming the parameter, never a server error.
"""

from __future__ import annotations

import json

import django_filters
from django import forms
from django.db.models import QuerySet

from durable import reports
from durable.graphs import graph_names
from durable.models import AuditEvent, Run, Thread
from durable.persistence.metadata import IndexedMetadataKeyEquals
from durable.persistence.text import UnstorableText, check_text
from durable.reports import waiting
from durable.reports.diagnosis import DIAGNOSES, filter_threads
from durable.reports.figures import threads_with_runs

MAX_META_FILTERS = 10


class RepeatedTextInput(forms.TextInput):
    """Reads every value of a repeated GET parameter (``?meta=a=1&meta=b=2``)."""

    def value_from_datadict(self, data, files, name):
        getlist = getattr(data, "getlist", None)
        values = getlist(name) if getlist else [data.get(name)]
        return [v for v in values if v not in (None, "")]


class MetaField(forms.Field):
    """A list of ``key=value`` texts, cleaned to ``[(key, value)]``. The value is read as
    JSON when it parses (``2``, ``true``, ``null``, ``"2"``), as text otherwise."""

    widget = RepeatedTextInput

    def to_python(self, value):
        pairs = []
        for item in value or []:
            key, sep, raw = str(item).partition("=")
            if not sep or not key.strip():
                raise forms.ValidationError(
                    f"{str(item)[:100]!r} is not key=value (for example team=ops).",
                    code="invalid",
                )
            pair = (key.strip(), _json_or_text(raw.strip()))
            try:
                check_text(pair)
            except UnstorableText as exc:
                raise forms.ValidationError(
                    f"{str(item)[:100]!r}: the metadata filter {exc.problem}.", code="invalid"
                ) from None
            pairs.append(pair)
        if len(pairs) > MAX_META_FILTERS:
            raise forms.ValidationError(f"At most {MAX_META_FILTERS} metadata filters.")
        return pairs


def _json_or_text(raw: str):
    """``raw`` read as JSON when it parses (``2``, ``true``, ``"2"``), else as text."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return raw


class MetaFilter(django_filters.Filter):
    field_class = MetaField

    def filter(self, qs, value):
        for key, wanted in value or []:
            qs = qs.filter(IndexedMetadataKeyEquals(key, wanted))
        return qs


class DriftFilter(django_filters.Filter):
    """``?drift=on``: only the threads whose newest checkpoint no longer fits the
    deployed graph (``durable.reports.drifted_threads``)."""

    field_class = forms.BooleanField

    def filter(self, qs, value):
        return reports.drifted_threads(qs) if value else qs


class OverdueFilter(django_filters.Filter):
    """``?overdue=on``: only the threads whose interrupts have waited longer than their
    tenant's ``overdue_after`` (``durable.reports.waiting.overdue``)."""

    field_class = forms.BooleanField

    def filter(self, qs, value):
        return waiting.overdue(qs) if value else qs


class WaitingFilter(django_filters.Filter):
    """``?waiting=on``: only the threads waiting for an answer, as the inbox counts them
    (``durable.reports.waiting.awaiting_answer``)."""

    field_class = forms.BooleanField

    def filter(self, qs, value):
        return waiting.awaiting_answer(qs) if value else qs


class ThreadFilter(django_filters.FilterSet):
    """Threads by status, graph, metadata ``key=value`` (all must hold), updated time
    range, a piece of the thread id (``q``), drift from the deployed graph (``drift``) and
    diagnosis (``durable.reports.diagnosis``), interrupts waiting (``waiting``) and waiting
    overdue (``overdue``)."""

    status = django_filters.ChoiceFilter(choices=Thread.Status.choices, empty_label="any")
    graph = django_filters.ChoiceFilter(choices=[], empty_label="any")
    meta = MetaFilter(label="Metadata key=value")
    updated_after = django_filters.IsoDateTimeFilter(
        field_name="updated_at", lookup_expr="gte", label="Updated at or after"
    )
    updated_before = django_filters.IsoDateTimeFilter(
        field_name="updated_at", lookup_expr="lt", label="Updated before"
    )
    q = django_filters.CharFilter(
        field_name="name", lookup_expr="icontains", label="Thread id contains"
    )
    drift = DriftFilter(label="No longer fits the deployed graph", required=False)
    overdue = OverdueFilter(label="Interrupt overdue", required=False)
    waiting = WaitingFilter(label="Waiting for an answer", required=False)
    diagnosis = django_filters.ChoiceFilter(
        choices=DIAGNOSES, empty_label="any", method="by_diagnosis", label="Diagnosis"
    )
    # Threads with a run that matches all of these at once (the Operations page's links).
    run_status = django_filters.ChoiceFilter(
        choices=Run.Status.choices, method="by_runs", label="With a run of status"
    )
    run_error_node = django_filters.CharFilter(
        method="by_runs", label="With a run failed in node", max_length=200
    )
    run_after = django_filters.IsoDateTimeFilter(
        method="by_runs", label="With a run created at or after"
    )
    run_before = django_filters.IsoDateTimeFilter(
        method="by_runs", label="With a run created before"
    )

    class Meta:
        model = Thread
        fields: list[str] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The registered graphs, read per request (tests register more at run time).
        self.filters["graph"].extra["choices"] = [(g, g) for g in graph_names()]

    def by_diagnosis(self, qs, name, value):
        return filter_threads(qs, value)

    RUN_FILTERS = ("run_status", "run_error_node", "run_after", "run_before")

    def by_runs(self, qs, name, value):
        """The run filters as one condition on one run, applied with the first given."""
        given = {k: self.form.cleaned_data.get(k) for k in self.RUN_FILTERS}
        if name != next(k for k in self.RUN_FILTERS if given[k] not in (None, "")):
            return qs
        return threads_with_runs(
            qs,
            status=given["run_status"] or "",
            error_node=given["run_error_node"] or "",
            after=given["run_after"],
            before=given["run_before"],
        )

    def without(self, name: str) -> QuerySet:
        """The queryset filtered by every valid filter except ``name`` (for the counts
        by status, which must not be narrowed by the status itself)."""
        qs = self.queryset.all()
        for key, value in self.form.cleaned_data.items():
            if key != name:
                qs = self.filters[key].filter(qs, value)
        return qs


class AuditFilter(django_filters.FilterSet):
    """The audit trail by ``action``, ``actor`` and ``thread`` (pieces of the names), and
    a time range (``after``, ``before``)."""

    action = django_filters.ChoiceFilter(choices=AuditEvent.Action.choices)
    actor = django_filters.CharFilter(lookup_expr="icontains")
    thread = django_filters.CharFilter(field_name="thread_name", lookup_expr="icontains")
    after = django_filters.DateTimeFilter(
        field_name="created_at",
        lookup_expr="gte",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
    )
    before = django_filters.DateTimeFilter(
        field_name="created_at",
        lookup_expr="lt",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
    )

    class Meta:
        model = AuditEvent
        fields: list[str] = []


# -- the store browser -------------------------------------------------------------------

# ``?page=`` of the store browser stops here: a bigger offset overflows the database's
# integers.
MAX_STORE_PAGE = 1_000_000


class BadFilter(ValueError):
    """A store filter the page cannot read; the message says why."""


def parse_filter(text: str) -> dict | None:
    """The store filter written in ``text``; ``None`` for none. A filter is ``key=value``
    pairs separated by commas or new lines (a value is read as JSON when it parses, else
    as text), or a JSON object in the store's own filter language (``{"key": value}`` or
    ``{"key": {"$gt": 1}}``). Raises ``BadFilter``, also for text no database can
    compare (``durable.persistence.text``)."""
    text = text.strip()
    if not text:
        return None
    parsed = _parse_filter(text)
    try:
        check_text(parsed, "filter")
    except UnstorableText as exc:
        raise BadFilter(f"{exc} No item is searched.") from None
    return parsed


def _parse_filter(text: str) -> dict:
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except ValueError as exc:  # JSONDecodeError, or a number of too many digits
            raise BadFilter(f"filter: not valid JSON: {exc}.") from None
        if not isinstance(parsed, dict):
            raise BadFilter("filter: a JSON filter must be an object.")
        return parsed
    result = {}
    for part in text.replace("\n", ",").split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise BadFilter(f"filter: {part.strip()!r} is not key=value.")
        result[key.strip()] = _json_or_text(value.strip())
    return result


def store_page(text: str) -> int:
    """``?page=`` of the store browser: 1 unless a positive number; at most
    ``MAX_STORE_PAGE``."""
    text = text.lstrip("0")
    if not (text.isascii() and text.isdigit()):
        return 1
    if len(text) > len(str(MAX_STORE_PAGE)):
        return MAX_STORE_PAGE
    return min(int(text), MAX_STORE_PAGE)
