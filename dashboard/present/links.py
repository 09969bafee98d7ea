"""The console's links that carry a query string: to a checkpoint, to its JSON, and the
query string itself (empty parameters left out, so equal pages have equal links)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.urls import reverse


def query_params(**values) -> str:
    """``?a=1&b=2`` of the non-empty ``values``; ``""`` when all are empty."""
    kept = {k: v for k, v in values.items() if v}
    return "?" + urlencode(kept) if kept else ""


def checkpoint_url(thread, checkpoint_id: str, ns: str = "") -> str:
    """The inspector of ``checkpoint_id`` of ``thread``, in namespace ``ns``."""
    return reverse("checkpoint", args=[thread.pk, checkpoint_id]) + query_params(ns=ns)


def json_url(thread, checkpoint_id: str, ns: str = "", key: str = "") -> str:
    """The whole checkpoint as JSON, or one state ``key`` of it (``checkpoint-json``)."""
    return reverse("checkpoint-json", args=[thread.pk, checkpoint_id]) + query_params(
        ns=ns, key=key
    )
