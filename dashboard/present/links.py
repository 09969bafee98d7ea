"""The console's links that carry a query string: to a checkpoint, to its JSON, and the
query string itself, new or a page's own changed (empty parameters left out, so equal
pages have equal links)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import QueryDict
from django.urls import reverse


def query_params(**values) -> str:
    """``?a=1&b=2`` of the non-empty ``values`` (a list gives its parameter once per
    item); ``""`` when all are empty."""
    kept = {k: v for k, v in values.items() if v}
    return "?" + urlencode(kept, doseq=True) if kept else ""


def query_changed(query: QueryDict, **changes) -> str:
    """``query`` (a request's ``GET``) with ``changes``: a value replaces the parameter's
    and moves it last, ``None`` removes it. ``"?"`` when nothing is left, so that a link
    clears the page's query string rather than keeping it."""
    kept = {key: values for key, values in query.lists() if key not in changes}
    kept.update((key, value) for key, value in changes.items() if value is not None)
    return query_params(**kept) or "?"


def checkpoint_url(thread, checkpoint_id: str, ns: str = "") -> str:
    """The inspector of ``checkpoint_id`` of ``thread``, in namespace ``ns``."""
    return reverse("checkpoint", args=[thread.pk, checkpoint_id]) + query_params(ns=ns)


def json_url(thread, checkpoint_id: str, ns: str = "", key: str = "") -> str:
    """The whole checkpoint as JSON, or one state ``key`` of it (``checkpoint-json``)."""
    return reverse("checkpoint-json", args=[thread.pk, checkpoint_id]) + query_params(
        ns=ns, key=key
    )
