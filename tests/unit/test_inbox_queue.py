"""The inbox as a queue, through Django's test client: sorted by oldest or newest waiting,
filtered by graph, action name and payload text with the count waiting per filter, in a
fixed number of queries; bulk answers (one run and one audit event per interrupt, and
kinds that differ refused with nothing changed); how long each interrupt waited and the
tenant's overdue mark, also as a filter of the threads list.

Waiting threads are run to their interrupt in this process and given the run a worker
records when it stops there (``arrived``): its ``interrupts`` and its ``ended_at``, when
the interrupt arrived."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from dashboard.views import inbox as inbox_views
from durable import engine
from durable.models import AuditEvent, Run, Tenant, Thread
from tests.helpers.threads import arrived, at_interrupt, everything, head

pytestmark = pytest.mark.django_db(transaction=True)


def shown(page: str) -> list[str]:
    """The thread ids of the inbox entries, in page order."""
    return re.findall(r'<h3 id="entry-\d+"><a [^>]*>([^<]+)</a>', page)


def test_newest_first_shows_a_just_arrived_interrupt_on_the_first_page(client):
    backlog = [arrived(ago=timedelta(hours=h + 1)) for h in range(18)]
    assert inbox_views.THREADS_PER_PAGE < len(backlog)
    new = arrived("email_reply", ago=timedelta(seconds=1))

    oldest = client.get(reverse("inbox"), {"sort": "oldest"}).content.decode()
    newest = client.get(reverse("inbox"), {"sort": "newest"}).content.decode()

    assert new.thread_id not in shown(oldest)  # the queue's tail, page 2 when oldest first
    assert shown(newest)[0] == new.thread_id
    assert shown(oldest)[0] == backlog[-1].thread_id  # waited 18 h
    assert "19 threads waiting in this view, newest first" in newest
    # The pages link on with the order kept.
    assert 'href="?sort=newest&amp;page=2"' in newest


def test_the_wait_counts_from_when_the_interrupt_arrived_not_from_the_thread(client):
    thread = arrived(ago=timedelta(hours=3, minutes=10))
    Thread.objects.filter(pk=thread.pk).update(created_at=timezone.now() - timedelta(days=9))
    page = client.get(reverse("inbox")).content.decode()
    assert re.search(r'<span data-testid="waited"[^>]*>waiting 3\xa0hours</span>', page)
    assert 'data-testid="overdue"' not in page
    assert 'id="bulk-form"' not in page  # nothing to answer in bulk with one entry


def test_an_interrupt_that_just_arrived_waited_less_than_a_minute_not_0_minutes(client):
    arrived(ago=timedelta(seconds=5))
    arrived("email_reply", ago=timedelta(hours=2, minutes=3))
    page = client.get(reverse("inbox")).content.decode()
    assert "0\xa0minutes" not in page
    assert 'expense_approval <span class="count">(1 waiting, oldest just now)' in page
    assert 'email_reply <span class="count">(1 waiting, oldest 2\xa0hours ago)' in page
    assert re.search(r'<span data-testid="waited"[^>]*>waiting less than a minute</span>', page)


def test_a_thread_forked_without_a_run_has_nothing_to_answer_and_is_not_in_the_inbox(client):
    forked, other = arrived(), arrived()
    # "Only add the checkpoint": as validate, whose router sends the claim on to
    # request_approval, which has not run yet: nothing is pending there.
    response = client.post(
        reverse("fork", args=[forked.pk, head(forked)]),
        {"as_node": "validate", "state-amount": "50", "reason": "corrected"},
    )
    assert response.status_code == 303
    assert Thread.objects.get(pk=forked.pk).status == Thread.Status.INTERRUPTED
    assert engine.thread_state(forked).interrupts == ()

    page = client.get(reverse("inbox")).content.decode()

    assert shown(page) == [other.name]
    assert 'expense_approval <span class="count">(1 waiting' in page
    assert "1 thread waits for a human" in page
    assert "Nothing is pending on this thread any more" not in page


def test_filters_by_graph_action_and_payload_text_with_the_count_per_filter(client):
    claims = [arrived() for _ in range(3)]
    emails = [arrived("email_reply") for _ in range(2)]
    review = arrived("parallel_review")  # a generic payload: no action name

    page = client.get(reverse("inbox")).content.decode()
    assert 'expense_approval <span class="count">(3 waiting' in page
    assert 'email_reply <span class="count">(2 waiting' in page
    assert '<option value="pay_expense">pay_expense (3)</option>' in page
    assert '<option value="send_email">send_email (2)</option>' in page

    by_action = client.get(reverse("inbox"), {"action": "send_email"}).content.decode()
    assert sorted(shown(by_action)) == sorted(t.thread_id for t in emails)
    assert "2 threads waiting in this view" in by_action

    # Text of the payload, any case: the order's question is in the drafted email.
    by_text = client.get(reverse("inbox"), {"q": "WHERE IS MY ORDER"}).content.decode()
    assert sorted(shown(by_text)) == sorted(t.thread_id for t in emails)
    by_graph = client.get(reverse("inbox"), {"graph": "expense_approval", "q": "grace"})
    assert sorted(shown(by_graph.content.decode())) == sorted(t.thread_id for t in claims)
    nothing = client.get(reverse("inbox"), {"q": "no such text"}).content.decode()
    assert shown(nothing) == [] and "0 threads waiting in this view" in nothing
    assert review.thread_id in shown(client.get(reverse("inbox")).content.decode())


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"sort": "sideways"}, "sort: Select a valid choice"),
        ({"q": "a\x00b"}, "payload text"),
        ({"action": "a\x00b"}, "<p>action: contains a NUL character"),
    ],
)
def test_a_bad_inbox_parameter_is_named_and_not_a_server_error(client, query, message):
    arrived()
    response = client.get(reverse("inbox"), query)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert "action: action:" not in response.content.decode()


def test_a_bulk_answer_of_one_interrupt_says_so_in_the_singular(client):
    thread = arrived()
    response = client.post(reverse("inbox-bulk"), {"threads": [thread.pk], "decision": "approve"})
    assert response.status_code == 303
    page = client.get(response["Location"]).content.decode()
    assert f"Answered 1 interrupt ({thread.name})." in page


def test_the_page_reads_a_fixed_number_of_queries_whatever_the_backlog(client):
    for _ in range(inbox_views.THREADS_PER_PAGE + 1):
        arrived()

    def queries(params) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(reverse("inbox"), params).status_code == 200
        return len(captured)

    params = {"sort": "newest", "action": "pay_expense", "q": "grace"}
    few = queries(params)
    for _ in range(8):
        arrived()
    assert queries(params) == few


# -- bulk answers --------------------------------------------------------------------------


def test_bulk_approval_resumes_each_thread_by_its_own_interrupt_and_audits_each(client):
    threads = [arrived() for _ in range(3)]
    left = arrived()
    response = client.post(
        reverse("inbox-bulk") + "?sort=newest",
        {"threads": [t.pk for t in threads], "decision": "approve"},
    )
    assert response.status_code == 303
    assert response["Location"] == reverse("inbox") + "?sort=newest"

    for thread in threads:
        [pending] = engine.pending_interrupts(thread)
        run = thread.runs.get(kind=Run.Kind.RESUME)
        assert run.command == {"resume": {pending.id: {"decisions": [{"type": "approve"}]}}}
        [event] = AuditEvent.objects.filter(action="resume", thread_id=thread.thread_id)
        assert event.detail["answers"] == [
            {"interrupt_id": pending.id, "decision": "approve", "action": "pay_expense"}
        ]
    assert AuditEvent.objects.filter(action="resume").count() == 3
    assert not left.runs.filter(kind=Run.Kind.RESUME).exists()
    page = client.get(response["Location"]).content.decode()
    assert "Answered 3 interrupts" in page


def test_bulk_rejection_sends_the_reason_to_each(client):
    threads = [arrived() for _ in range(2)]
    client.post(
        reverse("inbox-bulk"),
        {"threads": [t.pk for t in threads], "decision": "reject", "message": "Over budget"},
    )
    for thread in threads:
        [pending] = engine.pending_interrupts(thread)
        run = thread.runs.get(kind=Run.Kind.RESUME)
        assert run.command["resume"] == {
            pending.id: {"decisions": [{"type": "reject", "message": "Over budget"}]}
        }


def test_bulk_answers_only_the_interrupts_the_page_showed(client):
    """Found by hand: a bulk accept sent from a page that showed a draft accepted the
    thread's next draft, asked after someone answered the first elsewhere, unseen."""
    threads = [arrived("email_reply") for _ in range(2)]
    page = client.get(reverse("inbox")).content.decode()
    shown = {t.pk: engine.pending_interrupts(t)[0].id for t in threads}
    for pk, interrupt_id in shown.items():
        assert f'name="interrupt-{pk}" value="{interrupt_id}" form="bulk-form"' in page
    stale = {f"interrupt-{pk}": i for pk, i in shown.items()} | {
        f"interrupt-{threads[1].pk}": "0" * 32
    }
    before = everything()
    data = {"threads": [t.pk for t in threads], "decision": "approve"}
    response = client.post(reverse("inbox-bulk"), data | stale)
    assert response.status_code == 400
    message = f"threads: {threads[1].name} now waits on another interrupt than the one shown"
    assert message in response.content.decode()
    assert everything() == before
    fresh = {f"interrupt-{pk}": i for pk, i in shown.items()}
    assert client.post(reverse("inbox-bulk"), data | fresh).status_code == 303
    assert AuditEvent.objects.filter(action="resume").count() == 2


def test_bulk_on_agent_inbox_requests_accepts_each(client):
    threads = [arrived("email_reply") for _ in range(2)]
    client.post(reverse("inbox-bulk"), {"threads": [t.pk for t in threads], "decision": "approve"})
    for thread in threads:
        [pending] = engine.pending_interrupts(thread)
        [answer] = thread.runs.get(kind=Run.Kind.RESUME).command["resume"][pending.id]
        assert answer["type"] == "accept"
    assert AuditEvent.objects.filter(action="resume").count() == 2


@pytest.mark.parametrize(
    ("graphs", "decision", "message"),
    [
        (("expense_approval", "email_reply"), "approve", "are of different kinds"),
        (("expense_approval", "parallel_review"), "approve", "does not wait on one interrupt"),
        (("email_reply", "email_reply"), "maybe", "decision: maybe is neither approve nor reject"),
    ],
)
def test_bulk_refuses_what_cannot_be_answered_together_and_changes_nothing(
    client, graphs, decision, message
):
    threads = [arrived(g) for g in graphs]
    before = everything()
    audited = AuditEvent.objects.count()
    response = client.post(
        reverse("inbox-bulk"), {"threads": [t.pk for t in threads], "decision": decision}
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert message in page
    assert '<div class="errors" role="alert">' in page
    assert everything() == before
    assert AuditEvent.objects.count() == audited


def test_a_refused_bulk_answers_address_reloaded_goes_back_to_the_inbox(client):
    """A refused bulk answer leaves the browser on ``/inbox/bulk/?…``: reloading or
    bookmarking that address is the inbox with the same filters, not a blank 405."""
    url = reverse("inbox-bulk") + "?graph=expense_approval&sort=newest"
    response = client.get(url)
    assert response.status_code == 303
    assert response["Location"] == reverse("inbox") + "?graph=expense_approval&sort=newest"
    assert client.get(reverse("inbox-bulk"))["Location"] == reverse("inbox")


def test_bulk_with_a_thread_of_another_tenant_changes_nothing(client):
    mine = arrived()
    theirs = arrived()
    Thread.objects.filter(pk=theirs.pk).update(
        tenant=Tenant.objects.create(slug="globex", name="Globex")
    )
    before = everything()
    response = client.post(
        reverse("inbox-bulk"), {"threads": [mine.pk, theirs.pk], "decision": "approve"}
    )
    assert response.status_code == 400
    assert f"threads: {theirs.pk} is not a waiting thread here." in response.content.decode()
    assert everything() == before


# -- overdue -------------------------------------------------------------------------------


def test_interrupts_waiting_longer_than_the_tenant_setting_are_overdue(client):
    late = arrived(ago=timedelta(hours=30))
    recent = arrived(ago=timedelta(hours=2))
    page = client.get(reverse("inbox"), {"sort": "oldest"}).content.decode()
    late_at = page.index(f'data-thread="{late.pk}"')
    recent_at = page.index(f'data-thread="{recent.pk}"')
    assert 'data-testid="overdue"' in page[late_at:recent_at]
    assert 'data-testid="overdue"' not in page[recent_at:]
    assert "waiting 1\xa0day" in page[late_at:recent_at]

    Tenant.objects.filter(slug=Tenant.DEFAULT_SLUG).update(overdue_after=timedelta(hours=1))
    page = client.get(reverse("inbox")).content.decode()
    assert page.count('data-testid="overdue"') == 2


def test_the_threads_list_filters_by_overdue(client):
    late = arrived(ago=timedelta(days=2))
    recent = arrived(ago=timedelta(hours=1))
    idle = at_interrupt()
    Thread.objects.filter(pk=idle.pk).update(status=Thread.Status.IDLE)

    page = client.get(reverse("threads"), {"overdue": "on"}).content.decode()
    assert late.thread_id in page
    assert recent.thread_id not in page and idle.thread_id not in page
    everything_listed = client.get(reverse("threads")).content.decode()
    assert recent.thread_id in everything_listed


def test_an_answer_sent_by_key_comes_back_to_the_inbox_and_only_to_it(client):
    threads = [arrived() for _ in range(2)]
    for thread, back, lands in (
        (threads[0], "/inbox/?sort=newest", "/inbox/?sort=newest"),
        (threads[1], "https://elsewhere.example/inbox/", None),
    ):
        [pending] = engine.pending_interrupts(thread)
        response = client.post(
            reverse("inbox-answer", args=[thread.pk]),
            {f"decision-{pending.id}-0": "approve", "next": back},
        )
        run = thread.runs.get(kind=Run.Kind.RESUME)
        assert response.status_code == 303
        assert response["Location"] == (lands or reverse("run", args=[run.pk]))
    page = client.get("/inbox/?sort=newest").content.decode()
    assert f"Answered {threads[0].name}: run" in page


def test_the_overdue_time_is_a_setting_of_the_tenant_in_the_admin(superuser):
    admin = Client()
    admin.force_login(superuser)
    tenant = Tenant.default()
    url = reverse("admin:durable_tenant_change", args=[tenant.pk])
    assert 'name="overdue_after" value="1 00:00:00"' in admin.get(url).content.decode()
    response = admin.post(url, {"name": tenant.name, "overdue_after": "02:00:00"} | INLINE)
    assert response.status_code == 302, response.content.decode()[:3000]
    tenant.refresh_from_db()
    assert tenant.overdue_after == timedelta(hours=2)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-1:00:00", "at least 1 second"),
        ("0", "at least 1 second"),
        ("100000000 00:00:00", "at most 3650 days"),
        # Past the database's integers: was a 500 on save.
        ("999999999 00:00:00", "at most 3650 days"),
    ],
)
def test_an_overdue_time_out_of_range_is_refused_on_its_field(superuser, client, text, message):
    admin = Client()
    admin.force_login(superuser)
    tenant = Tenant.default()
    url = reverse("admin:durable_tenant_change", args=[tenant.pk])
    response = admin.post(url, {"name": tenant.name, "overdue_after": text} | INLINE)
    assert response.status_code == 200
    assert list(response.context["adminform"].form.errors) == ["overdue_after"]
    assert message in response.content.decode()
    tenant.refresh_from_db()
    assert tenant.overdue_after == timedelta(hours=24)
    # Was a 500 with 100000000 days saved: now minus the setting left the dates' range.
    assert client.get(reverse("threads"), {"overdue": "on"}).status_code == 200


# The empty membership inline of the tenant's change form.
INLINE = {
    "memberships-TOTAL_FORMS": "0",
    "memberships-INITIAL_FORMS": "0",
    "memberships-MIN_NUM_FORMS": "0",
    "memberships-MAX_NUM_FORMS": "1000",
}
