"""The Operations page (``/operations/``) and the counts behind it
(``durable.reports.figures``): runs seeded with chosen times and statuses give
exact numbers in its tables, in the right buckets, only the tenant's; its bars link to the
threads list filtered to the threads they count."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from durable.models import Run, Tenant, Thread
from durable.reports import figures as stats
from tests.helpers.operations import seeded_run, seeded_thread, stored
from tests.helpers.threads import at_interrupt
from tests.helpers.users import member

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 12, 3, 13, 30, 20, tzinfo=UTC)
HOUR = stats.WINDOWS["hour"]


def minute_ago(n: int, second: int = 10) -> datetime:
    """A time ``n`` minutes before the current minute began, ``second`` into it."""
    floor = timezone.now().replace(second=0, microsecond=0)
    return floor - timedelta(minutes=n) + timedelta(seconds=second)


def label(moment: datetime) -> str:
    return moment.strftime("%H:%M")


def page(client, query: str = "") -> str:
    response = client.get(reverse("operations") + query)
    assert response.status_code == 200, response.content.decode()[:2000]
    return response.content.decode()


def table(text: str, testid: str) -> list[list[str]]:
    """The rows of the table ``testid`` as lists of cell texts (the header row first)."""
    found = re.search(rf'<table[^>]*data-testid="{testid}".*?</table>', text, re.S)
    assert found, text[:3000]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", found.group(0), re.S)
    cells = [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S) for row in rows]
    return [[re.sub(r"<[^>]+>", "", c).strip() for c in row] for row in cells]


def bars(text: str, testid: str) -> list[dict]:
    """The links of the chart ``testid``: their ``data-*`` attributes and ``href``."""
    found = re.search(rf'<svg[^>]*data-testid="chart-{testid}".*?</svg>', text, re.S)
    assert found, text[:3000]
    links = []
    for attrs in re.findall(r"<a ([^>]*)>", found.group(0)):
        pairs = dict(re.findall(r'([\w-]+)="([^"]*)"', attrs))
        links.append({k: html.unescape(v) for k, v in pairs.items()})
    return links


def listed(client, href: str) -> set[str]:
    response = client.get(href)
    assert response.status_code == 200, response.content.decode()[:2000]
    return set(re.findall(r'<tr data-thread-id="([^"]+)">', response.content.decode()))


@pytest.fixture
def globex(db):
    return Tenant.objects.create(slug="globex", name="Globex")


# -- the counts ----------------------------------------------------------------------------


def test_runs_fall_in_the_bucket_of_the_minute_they_were_created():
    thread = seeded_thread("t1")
    seeded_run(thread, "success", datetime(2026, 12, 3, 13, 30, 0, tzinfo=UTC))
    seeded_run(thread, "success", datetime(2026, 12, 3, 13, 29, 59, tzinfo=UTC))
    seeded_run(thread, "error", datetime(2026, 12, 3, 12, 31, 0, tzinfo=UTC))  # first bucket
    seeded_run(thread, "error", datetime(2026, 12, 3, 12, 30, 59, tzinfo=UTC))  # before it
    buckets = stats.runs_per_bucket(Run.objects.all(), HOUR, NOW)
    assert len(buckets) == 60
    assert buckets[0].start == datetime(2026, 12, 3, 12, 31, tzinfo=UTC)
    assert buckets[-1].end == datetime(2026, 12, 3, 13, 31, tzinfo=UTC)
    assert buckets[-1].counts == {"success": 1}
    assert buckets[-2].counts == {"success": 1}
    assert buckets[0].counts == {"error": 1}
    assert sum(b.total for b in buckets) == 3


def test_a_day_is_24_hourly_buckets_and_a_week_28_of_six_hours():
    thread = seeded_thread("t1")
    seeded_run(thread, "success", datetime(2026, 12, 3, 7, 59, tzinfo=UTC))
    seeded_run(thread, "success", datetime(2026, 12, 3, 6, 0, tzinfo=UTC))
    day = stats.runs_per_bucket(Run.objects.all(), stats.WINDOWS["day"], NOW)
    assert len(day) == 24
    assert {b.start.hour: b.total for b in day if b.total} == {6: 1, 7: 1}
    week = stats.runs_per_bucket(Run.objects.all(), stats.WINDOWS["week"], NOW)
    assert len(week) == 28
    assert week[-1].start == datetime(2026, 12, 3, 12, tzinfo=UTC)
    assert week[-2].start == datetime(2026, 12, 3, 6, tzinfo=UTC)
    assert week[-2].counts == {"success": 2}


def test_percentiles_are_nearest_rank_of_duration_and_queue_wait():
    thread = seeded_thread("t1")
    other = seeded_thread("t2", graph="counted")
    created = datetime(2026, 12, 3, 13, 0, tzinfo=UTC)
    for seconds in range(1, 21):  # durations 1..20 s, waits 2..40 s
        seeded_run(thread, "success", created, wait=2 * seconds, duration=seconds)
    # Due in 100 s (not_before): its wait counts from then, not from its creation.
    seeded_run(
        other, "success", created, wait=103, duration=7, not_before=created + timedelta(seconds=100)
    )
    seeded_run(other, "pending", created)  # neither started nor ended
    timings = {t.graph: t for t in stats.timings(Run.objects.all(), HOUR, NOW)}
    assert set(timings) == {"", "counted", "expense_approval"}
    mine = timings["expense_approval"]
    assert (mine.runs, mine.duration_p50, mine.duration_p95) == (20, 10.0, 19.0)
    assert (mine.waits, mine.wait_p50, mine.wait_p95) == (20, 20.0, 38.0)
    theirs = timings["counted"]
    assert (theirs.runs, theirs.duration_p50, theirs.wait_p50) == (1, 7.0, 3.0)
    assert timings[""].runs == 21


def test_the_duration_chart_has_a_point_per_bucket_with_ended_runs(client):
    a, b = seeded_thread("a"), seeded_thread("b")
    early, late = minute_ago(30), minute_ago(4)
    for seconds in (2, 4, 6, 40):
        seeded_run(a, "success", early, wait=1, duration=seconds)
    seeded_run(b, "error", late, wait=1, duration=90)
    seeded_run(b, "pending", minute_ago(2))  # not ended: no point
    text = page(client)
    drawn = bars(text, "duration")
    assert [(d["data-bucket"], d["data-p50"], d["data-p95"]) for d in drawn] == [
        (label(early), "4.0 s", "40.0 s"),
        (label(late), "1.5 min", "1.5 min"),
    ]
    assert table(text, "table-duration")[1:] == [
        [label(early), "4", "4.0 s", "40.0 s"],
        [label(late), "1", "1.5 min", "1.5 min"],
    ]
    assert listed(client, drawn[0]["href"]) == {"a"}


def test_a_foreign_tenants_runs_are_not_counted(client, globex):
    mine = seeded_thread("mine")
    theirs = seeded_thread("theirs", tenant=globex)
    at = minute_ago(10)
    seeded_run(mine, "success", at)
    seeded_run(theirs, "success", at)
    seeded_run(theirs, "error", at)
    text = page(client)
    rows = table(text, "table-runs")
    header, body = rows[0], rows[1:]
    assert header[:3] == ["From (UTC)", "success", "error"]
    assert body[0][0] == label(at) and body[0][1:3] == ["1", "0"] and body[0][-1] == "1"
    assert "theirs" not in text


# -- the page --------------------------------------------------------------------------------


def test_the_runs_chart_has_a_bar_per_status_and_bucket_with_its_numbers(client):
    a, b, c = seeded_thread("a"), seeded_thread("b"), seeded_thread("c")
    early, late = minute_ago(20), minute_ago(5)
    seeded_run(a, "success", early)
    seeded_run(b, "success", early)
    seeded_run(c, "error", early, error_node="left")
    seeded_run(c, "success", late)
    text = page(client)
    drawn = bars(text, "runs")
    assert sorted((d["data-bucket"], d["data-status"], d["data-count"]) for d in drawn) == sorted(
        [
            (label(early), "success", "2"),
            (label(early), "error", "1"),
            (label(late), "success", "1"),
        ]
    )
    assert "<title>2 success runs, created " in text
    body = {row[0]: row for row in table(text, "table-runs")[1:]}
    assert body[label(early)][1:3] == ["2", "1"] and body[label(early)][-1] == "3"
    assert body[label(late)][1:3] == ["1", "0"]
    assert body["all"][1:3] == ["3", "1"] and body["all"][-1] == "4"

    # Each bar opens the threads list with the filter set: the threads it counts.
    by = {(d["data-bucket"], d["data-status"]): d["href"] for d in drawn}
    assert listed(client, by[(label(early), "success")]) == {a.name, b.name}
    assert listed(client, by[(label(early), "error")]) == {c.name}
    assert listed(client, by[(label(late), "success")]) == {c.name}


def test_the_run_filters_hold_on_one_run_together(client):
    """A thread with an error run in one minute and a success run in another is not a
    thread "with a success run in the first minute"."""
    thread = seeded_thread("mixed")
    seeded_run(thread, "error", minute_ago(20))
    seeded_run(thread, "success", minute_ago(5))
    first = minute_ago(20, second=0)
    query = {"run_status": "success", "run_after": first.strftime("%Y-%m-%dT%H:%M:%S")}
    query["run_before"] = (first + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S")
    href = reverse("threads") + "?" + "&".join(f"{k}={v}" for k, v in query.items())
    assert listed(client, href) == set()
    query["run_status"] = "error"
    href = reverse("threads") + "?" + "&".join(f"{k}={v}" for k, v in query.items())
    assert listed(client, href) == {"mixed"}
    shown = client.get(href).content.decode()
    assert 'data-testid="run-filter"' in shown and "failed" not in shown.split("run-filter")[1][:80]


@pytest.mark.django_db(transaction=True)  # the graph's saver writes on a connection of its own
def test_interrupts_waiting_by_age_link_to_the_waiting_threads(client):
    now = timezone.now()
    for name, ago in [("w1", 2), ("w2", 30), ("w3", 30), ("w4", 180), ("w5", 3000)]:
        thread = at_interrupt()
        Thread.objects.filter(pk=thread.pk).update(
            name=name, updated_at=now - timedelta(minutes=ago)
        )
    seeded_thread("idle", updated_at=now - timedelta(minutes=30))
    # Interrupted, with nothing pending at its latest checkpoint: waits for no one.
    seeded_thread("no-interrupt", status="interrupted", updated_at=now - timedelta(minutes=30))
    text = page(client)
    assert "5 threads waiting for an answer now, the oldest since" in text
    rows = table(text, "table-waiting")[1:]
    assert rows == [
        ["under 5 minutes", "1"],
        ["5 minutes to 1 hour", "2"],
        ["1 hour to 1 day", "1"],
        ["over 1 day", "1"],
    ]
    drawn = {d["data-label"]: d["href"] for d in bars(text, "waiting")}
    assert listed(client, drawn["5 minutes to 1 hour"]) == {"w2", "w3"}
    assert listed(client, drawn["over 1 day"]) == {"w5"}


def test_the_largest_threads_by_bytes_and_by_checkpoints(client):
    big, many, old = seeded_thread("big"), seeded_thread("many"), seeded_thread("old")
    stored(big, checkpoints=1, blob_bytes=5000)
    stored(many, checkpoints=4, blob_bytes=10)
    stored(old, checkpoints=9, blob_bytes=9000)
    Thread.objects.filter(pk=old.pk).update(updated_at=timezone.now() - timedelta(days=2))
    text = page(client)
    assert table(text, "table-bytes")[1:] == [["big", "5010"], ["many", "50"]]
    assert table(text, "table-checkpoints")[1:] == [["many", "4"], ["big", "1"]]
    drawn = bars(text, "bytes")
    assert [d["href"] for d in drawn] == [
        reverse("thread", args=[big.pk]),
        reverse("thread", args=[many.pk]),
    ]
    # The week's window reaches the thread updated two days ago.
    week = page(client, "?window=week")
    assert table(week, "table-checkpoints")[1] == ["old", "9"]


def test_errors_by_node_and_recoveries(client):
    a, b = seeded_thread("a"), seeded_thread("b", graph="counted")
    at = minute_ago(15)
    seeded_run(a, "error", at, error_node="request_approval")
    seeded_run(a, "error", at, error_node="request_approval")
    seeded_run(b, "error", at, error_node="left")
    recovered = seeded_run(b, "success", at, attempt=2)
    seeded_run(a, "error", minute_ago(90), error_node="request_approval")  # outside the hour
    text = page(client)
    assert table(text, "table-errors")[1:] == [
        ["expense_approval · request_approval", "2"],
        ["counted · left", "1"],
    ]
    drawn = {d["data-label"]: d["href"] for d in bars(text, "errors")}
    assert listed(client, drawn["counted · left"]) == {"b"}
    assert listed(client, drawn["expense_approval · request_approval"]) == {"a"}
    assert "1 run of the window claimed more than once" in text
    rows = table(text, "table-recoveries")[1:]
    assert [r[:5] for r in rows] == [[str(recovered.pk), "b", "counted", "2", "success"]]
    day = page(client, "?window=day")
    assert table(day, "table-errors")[1] == ["expense_approval · request_approval", "3"]


def test_a_bad_window_is_a_400_naming_the_field_in_the_layout(client):
    response = client.get(reverse("operations") + "?window=month")
    assert response.status_code == 400
    text = response.content.decode()
    assert 'data-testid="operations-errors"' in text
    assert "window: Select a valid choice. month is not one of the available choices." in text
    assert 'aria-label="Main"' in text  # the console's layout, with its navigation
    assert "<svg" not in text


def test_every_tenant_is_for_a_staff_auditor_only(client, globex):
    theirs = seeded_thread("theirs", tenant=globex)
    seeded_run(theirs, "error", minute_ago(10), attempt=3)
    stored(theirs, checkpoints=1, blob_bytes=100)
    seeded_run(seeded_thread("mine"), "success", minute_ago(10))
    refused = client.get(reverse("operations") + "?tenants=all")
    assert refused.status_code == 400
    assert "tenants: Only a staff auditor may count every tenant." in refused.content.decode()

    auditor = member("audrey", role="viewer")
    auditor.user_permissions.add(Permission.objects.get(codename="audit_all_tenants"))
    audrey = Client()
    audrey.force_login(auditor)
    own = table(page(audrey), "table-runs")
    assert own[-1][1:3] == ["1", "0"]  # the totals row: the default tenant's only
    every = page(audrey, "?tenants=all")
    assert "Operations of every tenant" in every
    assert table(every, "table-runs")[-1][1:3] == ["1", "1"]
    assert table(every, "table-bytes")[1:] == [["globex/theirs", "110"]]
    assert table(every, "table-recoveries")[1][1] == "globex/theirs"
    assert (
        "table-recoveries" not in page(audrey)
        and "globex" not in table(page(audrey), "table-bytes")[1][0]
    )


def test_the_navigation_links_to_the_page(client):
    text = client.get(reverse("threads")).content.decode()
    assert f'<a href="{reverse("operations")}">Operations</a>' in text


def test_a_bad_run_filter_on_the_threads_list_is_a_400_naming_it(client):
    response = client.get(reverse("threads") + "?run_status=lost&run_after=yesterday")
    assert response.status_code == 400
    text = html.unescape(response.content.decode())
    assert "With a run of status: Select a valid choice. lost is not one of" in text
    assert "With a run created at or after: Enter a valid date/time." in text


def test_the_page_reads_as_many_rows_however_many_threads_there_are(client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries() -> int:
        with CaptureQueriesContext(connection) as seen:
            page(client)
        return len(seen)

    first = seeded_thread("first", status="interrupted")
    stored(first, checkpoints=2, blob_bytes=10)
    seeded_run(first, "error", minute_ago(3), wait=1, duration=1, error_node="n", attempt=2)
    few = queries()
    for i in range(30):
        thread = seeded_thread(f"t{i}", status="interrupted")
        stored(thread, checkpoints=2, blob_bytes=10 + i)
        seeded_run(
            thread,
            "error",
            minute_ago(i % 50),
            wait=1,
            duration=i,
            error_node=f"n{i % 3}",
            attempt=2,
        )
    assert queries() == few


def test_a_user_of_no_tenant_sees_nothing_counted(db):
    from django.contrib.auth import get_user_model

    seeded_run(seeded_thread("someone-elses"), "success", minute_ago(3))
    nobody = Client()
    nobody.force_login(get_user_model().objects.create_user("nobody", password="x-long-pass-1"))
    text = page(nobody)
    assert "You are not a member of any tenant yet" in text
    assert "0 runs in the window." in text and "someone-elses" not in text
