"""The console's details an operator reads: statuses said in text and icon (glyphs that
Debian's default font has), long node names cut inside their box, the diff's
side-by-side rows, a fork update at fault named (and nothing changed), and a second tab
answering a busy thread told why in the console's words."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from dashboard.templatetags.console import STATUS_ICONS
from durable import engine, history
from durable.graphs import get_graph
from durable.models import Run, Thread
from tests.helpers.threads import EXPENSE, at_interrupt, everything, head

pytestmark = pytest.mark.django_db(transaction=True)


def interrupted() -> Thread:
    thread = engine.create_thread("expense_approval")
    get_graph("expense_approval").invoke(EXPENSE, engine.config_for(thread))
    Thread.objects.filter(pk=thread.pk).update(status=Thread.Status.INTERRUPTED)
    Run.objects.create(thread=thread, graph=thread.graph, kind="start", status="interrupted")
    thread.refresh_from_db()
    return thread


def test_statuses_are_said_in_text_and_icon_on_the_list_and_the_thread(client):
    thread = interrupted()
    icon = '<span aria-hidden="true">‖</span>'

    listing = client.get(reverse("threads")).content.decode()
    row = re.search(rf'<tr data-thread-id="{thread.thread_id}">.*?</tr>', listing, re.S).group(0)
    assert f'<span class="status status-interrupted">{icon} interrupted</span>' in row

    page = client.get(reverse("thread", args=[thread.pk])).content.decode()
    assert f'{icon} <span data-testid="thread-status">interrupted</span>' in page
    runs_table = re.search(r'<h2 id="runs-h">Runs</h2>.*?</table>', page, re.S).group(0)
    assert f'<span class="status status-interrupted">{icon} interrupted</span>' in runs_table


def test_a_long_node_name_is_cut_inside_its_box_and_whole_in_its_title(client):
    thread = engine.create_thread("fault_tolerance")
    page = client.get(reverse("thread-graph", args=[thread.pk])).content.decode()
    box = re.search(
        r'<g class="box" data-node="__error_handler__quote_shipping">.*?</g>', page, re.S
    )
    assert "<title>__error_handler__quote_shipping</title>" in box.group(0)
    text = re.search(r"<text [^>]*>(.*?)</text>", box.group(0)).group(1)
    assert text == "__error_handler_…"
    assert "<li><code>__error_handler__quote_shipping</code></li>" in page


def test_a_side_by_side_row_marks_only_the_side_that_has_a_line(client):
    thread = interrupted()
    newest, validated, first = [n.checkpoint_id for n in history.tree_page(thread.thread_id).nodes]
    # The input checkpoint's state is {} (one line); the next one's has several: the rows
    # past A's end are insertions with nothing on A's side.
    page = client.get(reverse("diff", args=[thread.pk]), {"a": first, "b": validated})
    rows = re.findall(r'<tr class="line-(\w+)">(.*?)</tr>', page.content.decode(), re.S)
    assert rows
    for kind, row in rows:
        a_side, b_side = re.findall(r'<td class="text[^"]*">.*?</td>', row, re.S)
        a_empty = "<code></code>" in a_side
        b_empty = "<code></code>" in b_side
        assert ("−" in a_side) == (not a_empty and kind in ("delete", "replace")), row
        assert ("+" in b_side) == (not b_empty and kind in ("insert", "replace")), row
    assert any(kind == "replace" and "<code></code>" in row for kind, row in rows)


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        # A reducer (operator.add on a list) refuses a string: the box of that key says so.
        (
            {"state-reviews": '"x"'},
            "state-reviews",
            "reviews: this key adds what you give to its list",
        ),
        # A key the graph's state does not have is refused, not dropped in silence.
        ({"state-verdit": '"ok"'}, None, "The state of this graph has no key verdit"),
    ],
)
def test_a_fork_update_at_fault_is_named_and_changes_nothing(client, data, field, message):
    thread = at_interrupt("parallel_review")
    before = everything()

    response = client.post(
        reverse("fork", args=[thread.pk, head(thread)]),
        {"as_node": "legal_review", "reason": "test", **data},
    )

    assert response.status_code == 400
    page = response.content.decode()
    assert message in page
    if field:
        assert f'id="{field}-errors"' in page
        assert message in re.search(rf'id="{field}-errors".*?</div>', page, re.S).group(0)
    assert everything() == before


def test_status_icons_are_glyphs_debians_default_font_has():
    # The browser tests' chromium draws with DejaVu; these are in DejaVu Sans. ⏸ and ⌛,
    # used before, are not, and showed as empty boxes.
    assert set(STATUS_ICONS.values()) <= set("◌▶✓‖✗◷⊘")


def test_a_second_tab_answering_a_busy_thread_is_told_in_the_consoles_words(client):
    # The first tab's answer started a run, which a worker has; the second tab still
    # shows the interrupt and sends its own answer.
    thread = interrupted()
    Thread.objects.filter(pk=thread.pk).update(name="claim-7")  # not its UUID
    thread.refresh_from_db()
    page = client.get(reverse("inbox-thread", args=[thread.pk])).content.decode()
    decision = re.search(r'name="(decision-[0-9a-f]+-0)"', page).group(1)
    run = Run.objects.create(thread=thread, graph=thread.graph, kind="resume", status="running")
    before = everything()

    for url in (reverse("inbox-answer", args=[thread.pk]), reverse("resume", args=[thread.pk])):
        response = client.post(url, {decision: "reject"})
        assert response.status_code == 400
        text = response.content.decode()
        assert f"is busy: run {run.pk} (resume) is running" in text
        assert "Thread &#x27;claim-7&#x27; is busy" in text
        assert "multitask_strategy" not in text
    assert everything() == before
