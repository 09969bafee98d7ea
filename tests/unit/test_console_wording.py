"""What the console says, said right: the thread page names its last run's outcome,
counts agree with their nouns, an example's input shows its own characters, the
side-by-side diff does not mark a line whose only change is its trailing comma, and a
404 or a 500 is a page of the console (no list of URLs, no traceback) with DEBUG on too.

Found by hand: a thread whose run succeeded said only ``idle``; "1 interrupt were
pending", "1 blobs"; the fault_tolerance input showed ``\\u00d7``; a key added after the
last one marked the line before it as removed; Django's technical 404 listed every URL
of the project."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client
from django.urls import path, reverse

from dashboard import errors
from dashboard.present.diffs import side_by_side
from dashboard.urls import urlpatterns as console_urls
from durable.models import Run
from durable.persistence.checkpoint import Counts
from durable.retention import PRUNE, Outcome, Report
from tests.helpers.threads import at_interrupt, head, made_run

pytestmark = pytest.mark.django_db(transaction=True)


def _text(response) -> str:
    return response.content.decode()


def test_the_thread_page_says_its_last_run_succeeded(client):
    run = made_run(status=Run.Status.SUCCESS)

    page = _text(client.get(reverse("thread", args=[run.thread_id])))

    status_line = re.search(r'<p class="status-line">.*?</p>', page, re.S).group(0)
    assert '<span data-testid="thread-status">idle</span>' in status_line
    assert f'last run <a href="/runs/{run.pk}/">{run.pk}</a> (start)' in status_line
    assert '<span data-testid="last-run-status">success</span>' in status_line


def test_the_thread_page_names_no_last_run_while_one_is_active(client):
    run = made_run(status=Run.Status.RUNNING)

    page = _text(client.get(reverse("thread", args=[run.thread_id])))

    assert f"run {run.pk} (start) is running" in page
    assert "last-run-status" not in page


def test_one_pending_interrupt_was_pending(client):
    thread = at_interrupt()

    page = _text(client.get(reverse("replay", args=[thread.pk, head(thread)])))

    assert "1 interrupt was pending here; it fires again." in page


def test_a_retention_summary_counts_in_the_singular_and_the_plural():
    def outcome(removed: Counts) -> Outcome:
        return Outcome(1, "default", "t", "t", "g", PRUNE, keep=1, removed=removed)

    one = Report(dry_run=True, outcomes=[outcome(Counts(1, 1, 1))])
    two = Report(dry_run=False, outcomes=[outcome(Counts(2, 0, 3)), outcome(Counts(1, 1, 1))])

    assert one.summary() == (
        "Would remove 1 checkpoint, 1 blob, 1 write: "
        "1 thread pruned, 0 deleted, 0 unchanged, 0 skipped (active run)."
    )
    assert two.summary().startswith("Removed 3 checkpoints, 1 blob, 4 writes: 2 threads pruned")


def test_an_example_input_shows_its_own_characters(client):
    page = html.unescape(_text(client.get(reverse("threads"))))

    assert '"order": "A-1042: 3 × blue mug"' in page
    assert "\\u00d7" not in page


def test_a_trailing_comma_alone_is_not_a_changed_line():
    rows = side_by_side({"a": 1}, {"a": 1, "b": 2})

    assert [(r.kind, r.a_text, r.b_text) for r in rows] == [
        ("equal", "{", "{"),
        ("equal", '  "a": 1', '  "a": 1,'),
        ("insert", "", '  "b": 2'),
        ("equal", "}", "}"),
    ]


def test_a_changed_value_is_still_a_changed_line():
    rows = side_by_side({"a": 1, "b": 2}, {"a": 5, "b": 2})

    assert [(r.kind, r.a_text, r.b_text) for r in rows if r.kind != "equal"] == [
        ("replace", '  "a": 1,', '  "a": 5,')
    ]


# -- 404 and 500 in the console's layout ----------------------------------------------------


def _boom(request):
    raise RuntimeError("the database fell over")


# This module is the URL conf of the 500 test: the console's URLs and one that fails.
urlpatterns = [*console_urls, path("boom/", _boom)]
handler404 = errors.not_found
handler500 = errors.server_error


@pytest.mark.parametrize("debug", [True, False])
@pytest.mark.parametrize("url", ["/no/such/page/", "/threads/999999/", "/runs/999999/"])
def test_a_404_is_a_console_page_without_the_url_list(client, settings, debug, url):
    settings.DEBUG = debug

    response = client.get(url)

    page = _text(response)
    assert response.status_code == 404
    assert "<h1>Not found</h1>" in page and 'class="brand"' in page
    assert "URLconf" not in page and "admin/" not in page and "Using the URLconf" not in page
    assert "Tenant: Default" in page  # rendered with the request: the header is there


@pytest.mark.parametrize("debug", [True, False])
def test_a_500_is_a_console_page_without_the_traceback(operator, settings, debug, caplog):
    settings.DEBUG = debug
    settings.ROOT_URLCONF = __name__
    client = Client(raise_request_exception=False)
    client.force_login(operator)

    response = client.get("/boom/")

    page = _text(response)
    assert response.status_code == 500
    assert "<h1>Server error</h1>" in page and 'class="brand"' in page
    assert "the database fell over" not in page and "Traceback" not in page
    assert "the database fell over" in caplog.text  # the log has it


def test_a_500_still_reaches_the_test_client_as_the_exception(client, settings):
    settings.ROOT_URLCONF = __name__
    with pytest.raises(RuntimeError, match="the database fell over"):
        client.get("/boom/")
