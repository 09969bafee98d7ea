"""The console's read side: the threads list, the checkpoint tree, the inspector, the
diff and the graph picture, through Django's test client.

Graphs run in this process (``graph.invoke``): no worker is needed to make history.
They save through DjangoSaver from LangGraph's threads, on their own connections, so
those tests commit (``transaction=True``); the list tests only write Thread rows.
"""

from __future__ import annotations

import datetime
import re
from typing import Annotated

import pytest
from django.urls import reverse
from django.utils import timezone
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from dashboard.present import lanes
from dashboard.present.tree import TREE_PAGE
from dashboard.views.threads import THREADS_PER_PAGE
from durable import engine, history
from durable.graphs import get_graph
from durable.history import TreeNode
from durable.models import Tenant, Thread
from durable.persistence.checkpoint import DjangoSaver
from tests.helpers.threads import EXPENSE

committed = pytest.mark.django_db(transaction=True)


# -- making history ---------------------------------------------------------------------


def interrupted_expense(thread_id: str = "expense-1", **metadata) -> Thread:
    """An expense_approval thread run in-process to its approval interrupt: checkpoints
    at steps -1 (input), 0, 1 (interrupted in request_approval)."""
    thread = engine.create_thread("expense_approval", name=thread_id, metadata=metadata)
    get_graph("expense_approval").invoke(EXPENSE, engine.config_for(thread), durability="sync")
    return thread


def checkpoint_ids(thread: Thread) -> list[str]:
    """The thread's checkpoint ids, newest first."""
    return [n.checkpoint_id for n in history.tree_page(thread.thread_id).nodes]


def row(page: str, checkpoint_id: str) -> str:
    """The tree's <li> of one checkpoint, as HTML."""
    found = re.search(rf'<li id="cp-{checkpoint_id}".*?</li>', page, re.S)
    assert found, f"no row for {checkpoint_id}"
    return found.group(0)


def get(client, name: str, *args, **params):
    return client.get(reverse(name, args=args), params)


# -- page 2: the tree -----------------------------------------------------------------


@committed
def test_a_fork_draws_a_second_lane_whose_first_checkpoint_is_an_update(client):
    thread = interrupted_expense()
    at_interrupt, validated, *_ = checkpoint_ids(thread)
    first = engine.fork(thread, at_interrupt, {"amount": 99.0}, as_node="validate")
    second = engine.fork(thread, at_interrupt, {"amount": 50.0}, as_node="validate")

    page = get(client, "thread-history", thread.pk).content.decode()

    assert 'data-lanes="2"' in page
    lanes_of = {
        cid: int(lane)
        for cid, lane in re.findall(
            r'<li id="cp-[^"]+" data-checkpoint-id="([^"]+)"'
            r' data-source="[^"]+" data-lane="(\d+)"',
            page,
        )
    }
    assert lanes_of[first.checkpoint_id] != lanes_of[second.checkpoint_id]
    newest = row(page, second.checkpoint_id)
    assert 'data-source="update"' in newest
    assert "as <code>validate</code>" in newest  # the node the fork counts as
    fork_point = row(page, at_interrupt)
    assert "⋔ 2 branches" in fork_point
    assert "‖ interrupt in request_approval" in fork_point
    assert "by <code>validate</code>" in fork_point  # the task that ran on its parent
    assert "by <code>__start__</code>" in row(page, validated)
    # Each SVG node has a <title> in words and links to its inspector.
    assert "<title>step 2 · update · written by validate" in page
    assert "<title>step 1 · loop · written by validate · interrupt in request_approval" in page
    assert reverse("checkpoint", args=[thread.pk, first.checkpoint_id]) in page


@committed
def test_the_thread_page_shows_the_tree_and_diff_picks(client):
    thread = interrupted_expense()
    newest, previous, *_ = checkpoint_ids(thread)
    page = get(client, "thread", thread.pk).content.decode()
    assert 'data-testid="tree-svg"' in page
    assert f'name="b" value="{newest}" aria-label' in page
    assert re.search(rf'name="a" value="{previous}"[^>]*checked', page)


@committed
def test_tree_pages_by_checkpoint_id_without_gaps_or_repeats(client):
    thread = engine.create_thread("expense_approval", name="long")
    made = chain(thread.thread_id, TREE_PAGE + 30)

    first = get(client, "thread-history", thread.pk).content.decode()
    first_ids = re.findall(r'<li id="cp-([^"]+)"', first)
    older = re.search(r'href="([^"]+)" rel="next">Older checkpoints', first).group(1)
    second = client.get(older.replace("&amp;", "&")).content.decode()
    second_ids = re.findall(r'<li id="cp-([^"]+)"', second)

    assert len(first_ids) == TREE_PAGE
    assert first_ids + second_ids == made[::-1]
    assert "↓ parent on an older page" in row(first, first_ids[-1])
    assert "↑ 1 child on a newer page" in row(second, second_ids[0])
    assert "Newer checkpoints" in second and "Older checkpoints" not in second


@committed
def test_an_htmx_request_for_the_tree_gets_only_the_tree(client):
    thread = interrupted_expense()
    response = client.get(
        reverse("thread-history", args=[thread.pk]), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="tree"
    )
    page = response.content.decode()
    assert page.lstrip().startswith('<section id="tree"')
    assert "<html" not in page


def chain(thread_id: str, length: int) -> list[str]:
    """``length`` checkpoints in a line, saved through DjangoSaver.put; oldest first."""
    saver = DjangoSaver()
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    made = []
    for step in range(length):
        checkpoint = empty_checkpoint()
        config = saver.put(config, checkpoint, {"source": "loop", "step": step}, {})
        made.append(checkpoint["id"])
    return made


def node(cid: str, parent: str | None) -> TreeNode:
    return TreeNode(checkpoint_id=cid, parent_id=parent, step=0, source="loop", created_at=None)


def test_lanes_follow_git_log_graph():
    # Newest first: two branches (e, d) off c, a branch (b2) off a, and a root.
    nodes = [node("e", "c"), node("d", "c"), node("c", "a"), node("b2", "a"), node("a", None)]
    placed = lanes.layout(nodes).places
    assert [placed[n].lane for n in "e d c".split()] == [0, 1, 0]
    assert placed["b2"].lane == 1  # reuses the lane d's branch freed when it joined c
    assert placed["a"].lane == 0
    assert lanes.layout(nodes).lanes == 2


def test_lanes_run_off_the_page_both_ways():
    nodes = [node("c", "b"), node("b", "a")]  # a is on an older page; c has a newer child
    result = lanes.layout(nodes, from_above={"c"})
    assert any(p.startswith("M12 0 V") for p in result.paths)  # comes in from the top
    assert any(p.endswith(f"V{result.height}") for p in result.paths)  # leaves at the bottom


# -- page 3: inspector ----------------------------------------------------------------------


@committed
def test_the_inspector_shows_values_next_tasks_and_pending_writes(client):
    thread = interrupted_expense()
    at_interrupt, validated, *_ = checkpoint_ids(thread)

    page = get(client, "checkpoint", thread.pk, at_interrupt).content.decode()
    assert re.search(r'data-testid="next"><code>request_approval</code>', page)
    assert 'data-key="employee"' in page and "Grace Hopper" in page
    assert "‖ interrupted" in page and "pay_expense" in page  # the task's interrupt
    assert re.search(r"<code>request_approval</code></th><td><code>__interrupt__</code>", page)

    earlier = get(client, "checkpoint", thread.pk, validated).content.decode()
    writes = re.search(r'data-testid="pending-writes".*?</table>', earlier, re.S).group(0)
    assert "<code>status</code>" in writes and "validated" in writes
    assert "<code>problems</code>" in writes
    # Values are highlighted on the server (Pygments classes), in collapsible <details>.
    assert '<details class="state-key" open data-key="amount">' in earlier
    assert '<span class="mf">42.5</span>' in earlier


@committed
def test_the_inspector_shows_messages_as_a_transcript(client, settings):
    # Not "chat": that is examples/chat.py's name, which the registry may have built.
    graphs = {**settings.DURABLE_GRAPHS, "weather_chat": f"{__name__}.build_chat"}
    settings.DURABLE_GRAPHS = graphs
    thread = engine.create_thread("weather_chat", name="chat-1")
    get_graph("weather_chat").invoke(
        {"messages": [HumanMessage("Weather in Leeds?", id="h1")]},
        engine.config_for(thread),
        durability="sync",
    )
    newest, *_, first_step, _ = checkpoint_ids(thread)

    page = get(client, "checkpoint", thread.pk, newest).content.decode()
    transcript = re.search(r'<ol class="transcript">.*?</ol>', page, re.S).group(0)
    assert [m for m in re.findall(r"<strong>(\w+)</strong>", transcript)] == [
        "Human",
        "AI",
        "Tool",
        "AI",
    ]
    assert "calls tool <code>get_weather</code>" in transcript
    assert "result of <code>call-1</code>" in transcript
    assert "Rain, 11°C" in transcript

    diff = get(client, "diff", thread.pk, a=first_step, b=newest).content.decode()
    # Messages are matched by id: the new ones are added paths, the first unchanged.
    assert "<code>messages[id=a1]</code>" in diff
    assert "<code>messages[id=h1]</code>" not in diff


class Chat(TypedDict):
    messages: Annotated[list, add_messages]


def build_chat() -> StateGraph:
    def model(state: Chat) -> dict:
        if isinstance(state["messages"][-1], ToolMessage):
            return {"messages": [AIMessage("It rains in Leeds.", id="a2")]}
        call = {"name": "get_weather", "args": {"city": "Leeds"}, "id": "call-1"}
        return {"messages": [AIMessage("", tool_calls=[call], id="a1")]}

    def tool(state: Chat) -> dict:
        return {"messages": [ToolMessage("Rain, 11°C", tool_call_id="call-1", id="t1")]}

    builder = StateGraph(Chat)
    builder.add_node("model", model)
    builder.add_node("tool", tool)
    builder.add_edge(START, "model")
    builder.add_conditional_edges(
        "model", lambda s: "tool" if s["messages"][-1].tool_calls else "__end__"
    )
    builder.add_edge("tool", "model")
    return builder


# -- page 4: diff -------------------------------------------------------------------------


@committed
def test_the_diff_shows_a_changed_path_side_by_side_and_swaps(client):
    thread = interrupted_expense()
    at_interrupt, *_ = checkpoint_ids(thread)
    fork = engine.fork(thread, at_interrupt, {"amount": 99.0}, as_node="validate")

    page = get(client, "diff", thread.pk, a=at_interrupt, b=fork.checkpoint_id).content.decode()

    changes = re.search(r'data-testid="changes".*?</table>', page, re.S).group(0)
    assert re.search(r"~ changed</td>\s*<th scope=\"row\"><code>amount</code>", changes)
    assert "42.5" in changes and "99.0" in changes
    lines = re.search(r'data-testid="line-diff".*?</table>', page, re.S).group(0)
    assert "&quot;amount&quot;: 42.5," in lines and "&quot;amount&quot;: 99.0," in lines
    swap = reverse("diff", args=[thread.pk]) + f"?a={fork.checkpoint_id}&amp;b={at_interrupt}"
    assert swap in page


@committed
def test_a_diff_without_two_checkpoints_is_a_form_error(client):
    thread = interrupted_expense()
    response = get(client, "diff", thread.pk, a=checkpoint_ids(thread)[0])
    assert response.status_code == 400
    assert "Checkpoint B: Pick checkpoint B." in response.content.decode()


# -- page 9: graph picture ---------------------------------------------------------------


@committed
def test_the_graph_picture_marks_where_the_thread_stands(client):
    thread = interrupted_expense()
    *_, start = checkpoint_ids(thread)
    page = get(client, "thread-graph", thread.pk).content.decode()
    assert '<g class="box current" data-node="request_approval">' in page
    assert '<g class="box" data-node="validate">' in page
    assert "<code>request_approval</code> <strong>▶ runs next</strong>" in page
    assert "graph TD;" in page  # LangGraph's mermaid source, for copying
    at_start = get(client, "thread-graph", thread.pk, checkpoint=start).content.decode()
    assert '<g class="box current" data-node="__start__">' in at_start


# -- not found ---------------------------------------------------------------------------


@committed
def test_unknown_threads_and_checkpoints_and_other_threads_checkpoints_are_404(client):
    thread = interrupted_expense()
    other = interrupted_expense("expense-2")
    mine, theirs = checkpoint_ids(thread)[0], checkpoint_ids(other)[0]
    missing = Thread.objects.order_by("-pk").first().pk + 1
    assert get(client, "thread-history", missing).status_code == 404
    assert get(client, "checkpoint", missing, mine).status_code == 404
    assert get(client, "diff", missing, a=mine, b=mine).status_code == 404
    assert get(client, "thread-graph", missing).status_code == 404
    assert (
        get(client, "checkpoint", thread.pk, "1f000000-0000-6000-8000-000000000000").status_code
        == 404
    )
    assert get(client, "checkpoint", thread.pk, theirs).status_code == 404
    assert get(client, "checkpoint", thread.pk, mine, ns="nowhere:1").status_code == 404
    assert get(client, "diff", thread.pk, a=mine, b=theirs).status_code == 404
    assert get(client, "thread-graph", thread.pk, checkpoint=theirs).status_code == 404


# -- page 1: threads ------------------------------------------------------------------------


def make_threads(*specs) -> list[Thread]:
    """Threads from ``(thread_id, status, graph, metadata, minutes_ago)``."""
    now = timezone.now()
    made = []
    for thread_id, status, graph, metadata, minutes_ago in specs:
        t = Thread.objects.create(
            tenant=Tenant.default(),
            thread_id=thread_id,
            name=thread_id,
            status=status,
            graph=graph,
            metadata=metadata,
        )
        Thread.objects.filter(pk=t.pk).update(
            updated_at=now - datetime.timedelta(minutes=minutes_ago)
        )
        made.append(t)
    return made


def listed(response) -> list[str]:
    assert response.status_code == 200, response.content.decode()[:2000]
    return re.findall(r'<tr data-thread-id="([^"]+)">', response.content.decode())


@pytest.mark.django_db
def test_filters_narrow_the_list_and_counts_follow_the_other_filters(client):
    make_threads(
        ("ops-invoice-1", "interrupted", "expense_approval", {"team": "ops", "priority": 2}, 1),
        ("ops-invoice-2", "idle", "expense_approval", {"team": "ops", "priority": "2"}, 2),
        ("ops-review-3", "interrupted", "parallel_review", {"team": "ops", "priority": 1}, 3),
        ("sales-4", "interrupted", "expense_approval", {"team": "sales"}, 600),
        ("sales-5", "error", "parallel_review", {"team": "sales"}, 5),
    )
    home = reverse("threads")

    assert listed(client.get(home)) == [
        "ops-invoice-1",
        "ops-invoice-2",
        "ops-review-3",
        "sales-5",
        "sales-4",
    ]
    assert listed(client.get(home, {"status": "interrupted"})) == [
        "ops-invoice-1",
        "ops-review-3",
        "sales-4",
    ]
    assert listed(client.get(home, {"graph": "parallel_review"})) == ["ops-review-3", "sales-5"]
    assert listed(client.get(home, {"q": "INVOICE"})) == ["ops-invoice-1", "ops-invoice-2"]
    # Several metadata pairs must all hold; a value that parses as JSON is JSON.
    both = client.get(home + "?meta=team=ops&meta=priority=2")
    assert listed(both) == ["ops-invoice-1"]
    assert listed(client.get(home + '?meta=priority="2"')) == ["ops-invoice-2"]
    an_hour_ago = (timezone.now() - datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
    assert listed(client.get(home, {"updated_before": an_hour_ago})) == ["sales-4"]
    assert "sales-4" not in listed(client.get(home, {"updated_after": an_hour_ago}))
    assert listed(client.get(home, {"sort": "updated"}))[0] == "sales-4"

    page = client.get(home + "?status=interrupted&meta=team=ops").content.decode()
    counts = dict(re.findall(r'data-status="(\w+)">\w+ <span class="count">(\d+)</span>', page))
    assert counts == {"all": "3", "idle": "1", "busy": "0", "interrupted": "2", "error": "0"}
    # The status links keep the other filters.
    assert 'href="?meta=team%3Dops&amp;status=error"' in page


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"updated_after": "last tuesday"}, "Updated at or after: Enter a valid date/time."),
        ({"meta": "team"}, "Metadata key=value: &#x27;team&#x27; is not key=value"),
        ({"meta": "=ops"}, "is not key=value"),
        ({"status": "sleeping"}, "Status: Select a valid choice. sleeping is not one"),
        ({"graph": "nope"}, "Graph: Select a valid choice."),
        ({"after": "yesterday"}, "This page link is damaged"),
        ({"sort": "name"}, "Select a valid choice. name is not one"),
    ],
)
def test_bad_filter_input_is_a_form_error(client, query, message):
    make_threads(("t-1", "idle", "expense_approval", {}, 1))
    response = client.get(reverse("threads"), query)
    assert response.status_code == 400
    page = response.content.decode()
    assert message in page
    assert 'data-testid="filter-errors"' in page
    assert "<tr data-thread-id" not in page  # no unfiltered list passed off as filtered


@pytest.mark.django_db
@pytest.mark.parametrize("sort", ["-updated", "updated"])
def test_keyset_pages_have_no_repeats_or_gaps_both_ways(client, sort):
    total = 2 * THREADS_PER_PAGE + 7
    # Ties in updated_at (three threads a minute) are broken by pk.
    make_threads(*((f"t-{i:03}", "idle", "expense_approval", {}, i // 3) for i in range(total)))
    expected = list(
        Thread.objects.order_by(
            *(("-updated_at", "-pk") if sort == "-updated" else ("updated_at", "pk"))
        ).values_list("thread_id", flat=True)
    )
    pages, url = [], reverse("threads") + f"?sort={sort}"
    while url:
        response = client.get(url)
        pages.append(listed(response))
        found = re.search(r'href="([^"]+)" rel="next"', response.content.decode())
        url = reverse("threads") + found.group(1).replace("&amp;", "&") if found else None
    assert [len(p) for p in pages] == [THREADS_PER_PAGE, THREADS_PER_PAGE, 7]
    assert sum(pages, []) == expected

    # And back from the last page, with the previous-page links.
    back, page = [], response.content.decode()
    while found := re.search(r'href="([^"]+)" rel="prev"', page):
        page = client.get(
            reverse("threads") + found.group(1).replace("&amp;", "&")
        ).content.decode()
        back.append(re.findall(r'<tr data-thread-id="([^"]+)">', page))
    assert back == pages[-2::-1]


@pytest.mark.django_db
def test_an_htmx_filter_request_gets_only_the_results(client):
    make_threads(("t-1", "idle", "expense_approval", {}, 1))
    response = client.get(
        reverse("threads"),
        {"status": "idle"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="thread-results",
    )
    page = response.content.decode()
    assert page.lstrip().startswith('<section id="thread-results"')
    assert "t-1" in page and "Start a run" not in page
