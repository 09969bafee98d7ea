"""Keyset paging of the threads list: a page of rows ordered by (updated_at, pk), and the
cursor text (``<updated_at in µs since the epoch>-<pk>``) that links to the next or
previous page. A deep page costs what the first does: no OFFSET is counted through."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from django import forms
from django.db.models import Q, QuerySet

from durable.models import Thread

# The orders of the threads list, by ``?sort=``.
SORTS = {"-updated": "newest first", "updated": "oldest first"}


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


def parse_cursor(text: str) -> Cursor | None:
    """The cursor written in ``text`` (``None`` for none). Raises ``ValidationError`` for
    a damaged one."""
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
