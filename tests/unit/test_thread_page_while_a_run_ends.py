"""The thread page while its run ends: wherever the worker's commit falls among the
page's reads, the page either still follows the run (its live part asks again) or
shows what the run's end wrote, never a "busy" thread with nothing left to refresh it.

The end is committed here, on the page's own connection, right after the page's n-th
query (Django's ``execute_wrapper``), for every n until the page has read everything
before it: as a worker's ``finish`` does it, the run's status and the thread's change in
one transaction.
"""

from __future__ import annotations

import re

import pytest
from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone

from durable.models import Run, Thread
from tests.helpers.threads import made_run

pytestmark = pytest.mark.django_db


def end(run: Run) -> None:
    with transaction.atomic():
        Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCESS, ended_at=timezone.now())
        Thread.objects.filter(pk=run.thread_pk).update(status=Thread.Status.IDLE)


def page_with_the_end_after(client, n: int) -> tuple[str, int]:
    """The thread page of a busy thread whose running run ends right after the page's
    ``n``-th query; and how many queries the page made."""
    run = made_run()
    Thread.objects.filter(pk=run.thread_pk).update(status=Thread.Status.BUSY)
    count, ending = 0, False

    def end_after_n(execute, sql, params, many, context):
        nonlocal count, ending
        result = execute(sql, params, many, context)
        if not ending:  # the end's own queries are not the page's
            count += 1
            if count == n:
                ending = True
                end(run)
                ending = False
        return result

    with connection.execute_wrapper(end_after_n):
        response = client.get(reverse("thread", args=[run.thread_pk]))
    assert response.status_code == 200
    return response.content.decode(), count


def test_a_run_ending_between_the_pages_reads_leaves_it_following_or_final(client):
    n = 1
    while True:
        page, queries = page_with_the_end_after(client, n)
        if queries < n:
            break  # the run ended after the page had read everything
        live = re.search(r'<section id="live"[^>]*>', page).group(0)
        status = re.search(r'data-testid="thread-status">(\w+)<', page).group(1)
        assert "hx-get=" in live or status == "idle", (
            f"the run ended after query {n} of {queries}: the page shows {status!r} "
            "and no longer follows the run"
        )
        n += 1
    assert n > 3  # the page made several reads, each one tried
