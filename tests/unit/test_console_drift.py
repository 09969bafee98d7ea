"""Schema drift in the console, through Django's test client: the thread page's drift
box, the threads list's ``?drift=on`` filter, the refusals, and the fork page prefilled by
``?migrate=1`` whose fork then runs on the deployed graph. A ``drifting`` thread stops at
its interrupt on v1 and v2 is deployed in this process (``tests.helpers.drift``)."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from durable import engine
from durable.models import Run
from tests.helpers.drift import deploy, old_thread, ran
from tests.helpers.threads import everything, head
from tests.helpers.users import member

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def v2():
    with deploy(2):
        yield


def test_the_thread_page_says_what_no_longer_fits_and_since_which_version(client, v2):
    thread = old_thread()
    page = client.get(reverse("thread", args=[thread.pk])).content.decode()
    box = re.search(r'<section class="warning drift".*?</section>', page, re.S).group(0)
    v1, deployed = thread.graph_version, engine.deployed_version("drifting")
    assert f"written by version <strong>{v1.name}</strong>" in box
    assert f'<strong data-testid="drift-since">{deployed.name}</strong>' in box
    assert "State key &#x27;topic&#x27; is not in the state schema." in box
    assert "The state schema requires &#x27;subject&#x27;, which it lacks." in box
    assert "Its pending interrupt waits in node &#x27;review&#x27;, which is gone." in box
    assert f"/checkpoints/{head(thread)}/fork/?migrate=1" in box


def test_a_thread_that_fits_shows_no_drift_box(client):
    thread = old_thread()
    with deploy(1):
        page = client.get(reverse("thread", args=[thread.pk])).content.decode()
    assert 'data-testid="drift"' not in page


def test_the_threads_list_filters_the_drifted_threads(client):
    drifted = old_thread("budget")
    with deploy(1):
        fitting = ran(engine.start("drifting", {"topic": "later"})).thread
    with deploy(2):
        # A v2 thread fits v2; the v1 thread that was migrated... is the next test's.
        fitting_v2 = ran(engine.start("drifting", {"subject": "new"})).thread
        listed = client.get(reverse("threads"), {"drift": "on"}).content.decode()
        everyone = client.get(reverse("threads")).content.decode()
    assert f'data-thread-id="{drifted.name}"' in listed
    assert f'data-thread-id="{fitting.name}"' in listed  # v1 too: it no longer fits v2
    assert f'data-thread-id="{fitting_v2.name}"' not in listed
    assert f'data-thread-id="{fitting_v2.name}"' in everyone
    assert 'id="f-drift" name="drift" checked' in listed


def test_resume_and_replay_from_the_console_are_refused_with_the_drift(client, v2):
    thread = old_thread()
    before = everything()
    response = client.post(reverse("resume", args=[thread.pk]), {})
    assert response.status_code == 400
    assert "no longer fits graph &#x27;drifting&#x27; as deployed" in response.content.decode()
    replayed = client.post(reverse("replay", args=[thread.pk, head(thread)]), {"reason": "again"})
    assert replayed.status_code == 400
    assert "Migrate the thread first" in replayed.content.decode()
    assert everything() == before


def test_migrate_prefills_the_fork_whose_run_then_goes_on_on_the_deployed_graph(client, v2):
    thread = old_thread()
    url = reverse("fork", args=[thread.pk, head(thread)]) + "?migrate=1"
    page = client.get(url).content.decode()
    assert 'data-testid="migration"' in page
    assert "Key <code>topic</code> is offered as <code>subject</code>." in page
    prefilled = re.search(r'<textarea id="state-subject"[^>]*>(.*?)</textarea>', page, re.S)
    assert json.loads(html.unescape(prefilled.group(1))) == "budget"
    assert re.search(r'<option value="prepare"[^>]*selected', page)
    assert f'action="{url}"' in page
    # The preview is the migration's, before any edit: subject set, prepare next.
    preview = page[page.index('data-testid="fork-preview"') :]
    assert "<code>subject</code>" in preview and "+ added" in preview

    response = client.post(
        url,
        {
            "as_node": "prepare",
            "state-subject": '"budget"',
            "reason": "Migrate to v2",
            "run_after": "on",
        },
    )
    assert response.status_code == 303, response.content.decode()[:3000]
    run = Run.objects.get(pk=int(response["Location"].strip("/").split("/")[-1]))
    assert ran(run).status == Run.Status.INTERRUPTED
    assert engine.thread_drift(thread) is None
    page = client.get(reverse("thread", args=[thread.pk])).content.decode()
    assert 'data-testid="drift"' not in page
    (asking,) = engine.pending_interrupts(thread)
    response = client.post(
        reverse("resume", args=[thread.pk]), {f"answer-{asking.id}": '"approved"'}
    )
    assert response.status_code == 303
    assert ran(thread.runs.first()).status == Run.Status.SUCCESS
    assert engine.thread_state(thread).values["verdict"] == "approved: budget"


def test_a_viewer_sees_the_drift_but_no_migrate_link(v2):
    thread = old_thread()
    viewer = Client()
    viewer.force_login(member("viewer", role="viewer"))
    page = viewer.get(reverse("thread", args=[thread.pk])).content.decode()
    assert 'data-testid="drift"' in page
    assert "?migrate=1" not in page


def test_the_other_pages_of_a_drifted_thread_still_open(client, v2):
    thread = old_thread()
    checkpoint = head(thread)
    for url in (
        reverse("thread-history", args=[thread.pk]),
        reverse("checkpoint", args=[thread.pk, checkpoint]),
        reverse("thread-graph", args=[thread.pk]),
        reverse("inbox"),
        reverse("inbox-thread", args=[thread.pk]),
        reverse("fork", args=[thread.pk, checkpoint]),
        reverse("replay", args=[thread.pk, checkpoint]),
    ):
        assert client.get(url).status_code == 200, url


def test_closing_a_drifted_thread_from_the_inbox_leaves_it_fitting_and_idle(client, v2):
    thread = old_thread()
    response = client.post(
        reverse("inbox-close", args=[thread.pk]),
        {"checkpoint_id": head(thread), "reason": "Obsolete after the release"},
    )
    assert response.status_code == 303, response.content.decode()[:2000]
    page = client.get(reverse("thread", args=[thread.pk])).content.decode()
    assert 'data-testid="drift"' not in page
    assert 'data-testid="thread-status">idle<' in page


def _diagnosis_line(page: str) -> str:
    found = re.search(r'<p class="diagnosis[^"]*"[^>]*>(.*?)</p>', page, re.S)
    assert found, page[:3000]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", found.group(1))).strip()


def test_the_diagnosis_says_incompatible_and_links_migrate(client):
    thread = old_thread()
    with deploy(1):
        page = client.get(reverse("thread", args=[thread.pk])).content.decode()
        waiting = client.get(reverse("threads"), {"diagnosis": "waiting"}).content.decode()
    assert "Waiting for a person" in _diagnosis_line(page)
    assert f'data-thread-id="{thread.name}"' in waiting
    with deploy(2):
        page = client.get(reverse("thread", args=[thread.pk])).content.decode()
        deployed = engine.deployed_version("drifting")
        incompatible = client.get(reverse("threads"), {"diagnosis": "incompatible"})
        waiting = client.get(reverse("threads"), {"diagnosis": "waiting"}).content.decode()
    text = html.unescape(_diagnosis_line(page))
    assert text.startswith(
        f"Incompatible the newest checkpoint no longer fits {deployed.name} (since "
        f"{deployed.name}): state key 'topic' is not in the state schema"
    )
    assert "in node 'review', which is gone" in text
    migrate = reverse("fork", args=[thread.pk, head(thread)]) + "?migrate=1"
    assert f'<a class="diagnosis-action" href="{migrate}"' in page
    assert f'data-thread-id="{thread.name}"' in incompatible.content.decode()
    assert f'data-thread-id="{thread.name}"' not in waiting
