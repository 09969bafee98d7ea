"""Big state values: every page shows them once, shortened, and links to the whole.

An expense claim whose description is 2 MB used to make the thread page weigh 8 MB
(the description printed whole in the interrupt's text, its arguments, its edit box and
the state), the inspector 10 MB and the inbox 6 MB.
"""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from dashboard.forms import ResumeForm
from dashboard.present import values as present
from durable import engine, history
from durable.models import Run, RunEvent
from tests.helpers.threads import BIG, big_claim_thread, head

pytestmark = pytest.mark.django_db(transaction=True)

# Far under the 2 MB value, far over what the pages need.
PAGE_BUDGET = 200_000


def test_pages_of_a_thread_with_a_2_mb_value_stay_small_and_link_to_the_whole(client):
    thread = big_claim_thread()
    checkpoint = head(thread)
    # The input checkpoint (step -1) has no values yet: the diff adds the description.
    first = history.tree_page(thread.thread_id).nodes[-1].checkpoint_id
    pages = {
        "thread": reverse("thread", args=[thread.pk]),
        "inbox": reverse("inbox"),
        "inbox entry": reverse("inbox-thread", args=[thread.pk]),
        "inspector": reverse("checkpoint", args=[thread.pk, checkpoint]),
        "fork": reverse("fork", args=[thread.pk, checkpoint]),
        "diff": reverse("diff", args=[thread.pk]) + f"?a={first}&b={checkpoint}",
    }
    for name, url in pages.items():
        response = client.get(url)
        assert response.status_code == 200, name
        assert len(response.content) < PAGE_BUDGET, (name, len(response.content))
        page = response.content.decode()
        assert "x" * 2000 in page, name  # the value's start is there to read
        assert "x" * 2001 not in page, name

    thread_page = client.get(pages["thread"]).content.decode()
    assert "… [+2,095,152 characters]" in thread_page
    assert 'data-testid="state-cut"' in thread_page
    whole = reverse("checkpoint-json", args=[thread.pk, checkpoint])
    assert f'href="{whole}"' in thread_page

    inspector = client.get(pages["inspector"]).content.decode()
    assert f'href="{whole}?key=description"' in inspector
    assert f'href="{whole}?key=amount"' not in inspector  # shown whole already


def test_the_json_download_has_the_whole_value_and_the_whole_checkpoint(client):
    thread = big_claim_thread()
    url = reverse("checkpoint-json", args=[thread.pk, head(thread)])

    one = client.get(url, {"key": "description"})
    assert one.status_code == 200
    assert one["Content-Type"] == "application/json"
    assert json.loads(one.content) == BIG

    whole = json.loads(client.get(url).content)
    assert whole["values"]["description"] == BIG
    assert whole["next"] == ["request_approval"]
    (task,) = whole["tasks"]
    (interrupt,) = task["interrupts"]
    assert interrupt["value"]["action_requests"][0]["args"]["description"] == BIG

    assert client.get(url, {"key": "nope"}).status_code == 404
    other = engine.create_thread("expense_approval")
    assert client.get(reverse("checkpoint-json", args=[other.pk, head(thread)])).status_code == 404


def test_an_argument_too_large_to_edit_is_left_out_and_kept(client):
    thread = big_claim_thread()
    (pending,) = engine.pending_interrupts(thread)
    form = ResumeForm([pending])
    (action,) = form.cards[0].actions
    inputs = {arg.spec.key: arg for arg in action.inputs}
    assert inputs["description"].spec.too_large
    assert not inputs["amount"].spec.too_large

    page = client.get(reverse("thread", args=[thread.pk])).content.decode()
    assert f'name="{inputs["description"].field.html_name}"' not in page
    assert "too large to edit here" in page

    # An edit of the other arguments: the description, not sent, stays as it was.
    edited = ResumeForm(
        [pending],
        {
            action.decision.html_name: "edit",
            inputs["employee"].field.html_name: "Grace Hopper",
            inputs["amount"].field.html_name: "40",
        },
    )
    assert edited.is_valid(), edited.errors
    (decision,) = edited.resume_args["value"]["decisions"]
    assert decision["edited_action"]["args"] == {
        "employee": "Grace Hopper",
        "amount": 40,
        "description": BIG,
    }


def test_a_fork_leaves_a_key_too_large_to_edit_as_it_is(client):
    thread = big_claim_thread()
    checkpoint = head(thread)
    page = client.get(reverse("fork", args=[thread.pk, checkpoint])).content.decode()
    assert "Too large to edit here" in page
    assert f"{reverse('checkpoint-json', args=[thread.pk, checkpoint])}?key=description" in page

    response = client.post(
        reverse("fork", args=[thread.pk, checkpoint]),
        {"as_node": "validate", "reason": "Lower the amount", "state-amount": "40"},
    )
    assert response.status_code == 303
    values = engine.thread_state(thread).values
    assert values["amount"] == 40
    assert values["description"] == BIG


def test_the_run_page_shortens_an_event_and_links_to_it_whole(client):
    thread = engine.create_thread("expense_approval")
    run = Run.objects.create(thread=thread, graph=thread.graph, kind="start", status="success")
    RunEvent.objects.append(run.pk, "updates", {"validate": {"description": BIG}})

    page = client.get(reverse("run", args=[run.pk]))
    assert len(page.content) < PAGE_BUDGET
    event_url = reverse("run-event", args=[run.pk, 1])
    assert f'href="{event_url}"' in page.content.decode()

    whole = client.get(event_url)
    assert json.loads(whole.content)["data"] == {"validate": {"description": BIG}}
    assert client.get(reverse("run-event", args=[run.pk, 2])).status_code == 404


def test_shorten_cuts_long_strings_lists_and_objects_and_says_how_much():
    value = {
        "text": "y" * (present.STRING_LIMIT + 5),
        "items": list(range(present.ITEMS_LIMIT + 3)),
        "wide": {f"k{i:04}": i for i in range(present.ITEMS_LIMIT + 2)},
        "small": [1, "two"],
    }
    short, cut = present.shorten(value)
    assert cut
    assert short["text"] == "y" * present.STRING_LIMIT + "… [+5 characters]"
    assert short["items"][-1] == "… [+3 items]"
    assert len(short["items"]) == present.ITEMS_LIMIT + 1
    assert short["wide"]["…"] == "[+2 keys]"
    assert short["small"] == [1, "two"]
    assert present.shorten({"small": [1, "two"]}) == ({"small": [1, "two"]}, False)

    many = [("z" * present.STRING_LIMIT) for _ in range(present.ITEMS_LIMIT)]
    shown = present.shown(many)
    assert shown.cut
    assert len(shown.text) < present.TEXT_LIMIT + 100
