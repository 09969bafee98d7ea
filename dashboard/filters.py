"""The threads list's filters (django-filter) and its keyset pager.

Every filter is a GET parameter, so a filtered list is a link:
``?status=interrupted&graph=expense_approval&meta=team=ops&meta=priority=2
&updated_after=2026-11-01T00:00&q=invoice&sort=-updated&after=<cursor>``.
Bad input is a form error naming the parameter, never a server error.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass

import django_filters
from django import forms
from django.db.models import Q, QuerySet

from durable.graphs import graph_names
from durable.models import Thread
from durable.persistence.metadata import IndexedMetadataKeyEquals

MAX_META_FILTERS = 10
SORTS = {"-updated": "newest first", "updated": "oldest first"}


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
            if has_nul(pair):
                raise forms.ValidationError(
                    f"{str(item)[:100]!r}: metadata cannot hold a NUL character.",
                    code="invalid",
                )
            pairs.append(pair)
        if len(pairs) > MAX_META_FILTERS:
            raise forms.ValidationError(f"At most {MAX_META_FILTERS} metadata filters.")
        return pairs


def has_nul(value) -> bool:
    """Whether ``value`` holds a NUL character in any string, key or item: PostgreSQL
    refuses NUL in text and jsonb, so a filter with one is an input error."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(has_nul(k) or has_nul(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(has_nul(v) for v in value)
    return False


def _json_or_text(raw: str):
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


class ThreadFilter(django_filters.FilterSet):
    """Threads by status, graph, metadata ``key=value`` (all must hold), updated time
    range, and a piece of the thread id (``q``)."""

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

    class Meta:
        model = Thread
        fields: list[str] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The registered graphs, read per request (tests register more at run time).
        self.filters["graph"].extra["choices"] = [(g, g) for g in graph_names()]

    def without(self, name: str) -> QuerySet:
        """The queryset filtered by every valid filter except ``name`` (for the counts
        by status, which must not be narrowed by the status itself)."""
        qs = self.queryset.all()
        for key, value in self.form.cleaned_data.items():
            if key != name:
                qs = self.filters[key].filter(qs, value)
        return qs


class PageForm(forms.Form):
    """Sort order and keyset cursors: ``after`` (the next page) or ``before`` (the
    previous one), each ``<updated_at in µs since the epoch>-<pk>`` of a row."""

    sort = forms.ChoiceField(choices=list(SORTS.items()), required=False)
    after = forms.CharField(required=False, max_length=64)
    before = forms.CharField(required=False, max_length=64)

    def clean_after(self):
        return _cursor(self.cleaned_data["after"])

    def clean_before(self):
        return _cursor(self.cleaned_data["before"])

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("after") and cleaned.get("before"):
            raise forms.ValidationError("Give either after or before, not both.")
        return cleaned


@dataclass(frozen=True)
class Cursor:
    updated_at: datetime.datetime
    pk: int

    def __str__(self) -> str:
        delta = self.updated_at - EPOCH
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        return f"{micros}-{self.pk}"


EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def cursor_of(thread: Thread) -> str:
    return str(Cursor(thread.updated_at, thread.pk))


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _cursor(text: str) -> Cursor | None:
    if not text:
        return None
    micros, sep, pk = text.partition("-")
    # isdigit() alone takes superscripts and other scripts' digits, which int() refuses.
    if not sep or not _digits(micros) or not _digits(pk):
        raise forms.ValidationError("This page link is damaged; start again from the first page.")
    try:
        when = EPOCH + datetime.timedelta(microseconds=int(micros))
    except OverflowError:
        raise forms.ValidationError("This page link is damaged.") from None
    return Cursor(when, int(pk))


@dataclass
class KeysetPage:
    """``rows`` of one page; ``next``/``previous``: cursors to pass as ``after`` /
    ``before``, or ``None`` at an end."""

    rows: list
    next: str | None
    previous: str | None


def keyset_page(qs: QuerySet, *, newest_first: bool, after, before, size: int) -> KeysetPage:
    """One page of ``qs`` ordered by (updated_at, pk), after or before a cursor."""
    forward = before is None
    descending = newest_first == forward  # a previous page reads the other way
    order = ("-updated_at", "-pk") if descending else ("updated_at", "pk")
    cursor = after or before
    if cursor is not None:
        op = "lt" if descending else "gt"
        qs = qs.filter(
            Q(**{f"updated_at__{op}": cursor.updated_at})
            | Q(updated_at=cursor.updated_at, **{f"pk__{op}": cursor.pk})
        )
    rows = list(qs.order_by(*order)[: size + 1])
    more = len(rows) > size
    rows = rows[:size]
    if not forward:
        rows.reverse()
    has_next = more if forward else True
    has_previous = cursor is not None if forward else more
    return KeysetPage(
        rows=rows,
        next=cursor_of(rows[-1]) if rows and has_next else None,
        previous=cursor_of(rows[0]) if rows and has_previous else None,
    )
