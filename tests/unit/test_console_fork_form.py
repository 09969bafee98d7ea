"""The fork form on the console: state keys edited as what they are (typed inputs from
the state schema, a transcript of messages), Fork and Replay on each node of the tree,
the form opened beside the tree, and the live preview (``fork-preview``): what the fork
would write and run next, or the graph's refusal on its field, with nothing written."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from dashboard.forms import ForkForm
from durable import engine
from durable.engine import GraphShape
from durable.graphs import get_graph
from durable.models import Thread
from tests.helpers.threads import at_interrupt, everything, head
from tests.helpers.users import member

pytestmark = pytest.mark.django_db(transaction=True)

HTMX_PANE = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "checkpoint-detail"}


def chat_thread() -> Thread:
    """A chat thread that answered one human message, in this process."""
    thread = engine.create_thread("chat")
    chat = {"messages": [{"type": "human", "content": "hi"}]}
    get_graph("chat").invoke(chat, engine.config_for(thread))
    return thread


def preview(client, thread, checkpoint, data) -> str:
    response = client.post(
        reverse("fork-preview", args=[thread.pk, checkpoint]), data, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    return response.content.decode()


def test_plain_keys_are_typed_inputs_with_json_one_click_away(client):
    thread = at_interrupt()
    page = client.get(reverse("fork", args=[thread.pk, head(thread)])).content.decode()

    assert 'id="id_typed-amount" name="typed-amount" value="42.5"' in page
    assert 'id="id_typed-employee" name="typed-employee" value="Grace Hopper"' in page
    assert "<summary>amount as JSON</summary>" in page
    # A list of strings stays a JSON box: no typed input for it.
    assert 'name="typed-problems"' not in page and 'name="state-problems"' in page
    assert 'data-testid="preview-next"' in page  # the preview, computed without JavaScript


def test_a_typed_edit_forks_with_its_value(client):
    thread = at_interrupt()
    checkpoint = head(thread)
    current = "42.5"
    form = {
        "as_node": "validate",
        "typed-amount": "5",
        "state-amount": current,  # the JSON box as shown: unchanged
        "typed-employee": "Grace Hopper",
        "reason": "Finance corrected the amount",
    }

    response = client.post(reverse("fork", args=[thread.pk, checkpoint]), form)

    assert response.status_code == 303
    assert engine.thread_state(thread).values["amount"] == 5
    assert engine.thread_state(thread).next == ("request_approval",)


def test_the_preview_of_a_plain_key_shows_the_change_and_the_next_node_and_writes_nothing(
    client,
):
    thread = at_interrupt()
    checkpoint = head(thread)
    before = everything()

    page = preview(client, thread, checkpoint, {"as_node": "validate", "typed-amount": "5"})

    assert everything() == before
    assert "<code>amount</code>" in page and "42.5" in page and ">5</pre>" in page
    runs_next = 'data-testid="preview-next">Runs next (as <code>validate</code>): '
    assert runs_next + "<code>request_approval</code>" in page
    assert "<html" not in page


def test_the_preview_shows_an_error_on_its_field_and_writes_nothing(client):
    thread = at_interrupt()
    checkpoint = head(thread)
    before = everything()

    page = preview(client, thread, checkpoint, {"as_node": "validate", "state-amount": "{12"})

    assert everything() == before
    assert "The graph would refuse this fork" in page
    slot = page[page.index('id="pv-state-amount"') :]
    assert 'hx-swap-oob="true"' in slot[:80]
    assert "amount: the value is not valid JSON" in slot[: slot.index("</div>")]

    page = preview(client, thread, checkpoint, {"as_node": "validate", "typed-amount": "abc"})
    slot = page[page.index('id="pv-typed-amount"') :]
    assert "amount must be a number." in slot[: slot.index("</div>")]
    assert everything() == before


def test_fork_and_run_is_off_while_the_graph_would_refuse_the_update(client):
    thread = at_interrupt()
    checkpoint = head(thread)

    page = preview(client, thread, checkpoint, {"as_node": "validate", "state-amount": "{12"})

    assert "The graph would refuse this fork" in page
    # The buttons, swapped out of band: "Fork and run" disabled, and why, beside it.
    assert 'name="run_after" value="on" disabled aria-describedby="fork-run-refused"' in page
    refused = page[page.index('id="fork-run-refused"') :]
    assert "The graph would refuse this update" in refused[: refused.index("</p>")]
    # Corrected, the update would run: the button is back.
    page = preview(client, thread, checkpoint, {"as_node": "validate", "state-amount": "12"})
    assert 'name="run_after" value="on">Fork and run' in page
    assert 'id="fork-run-refused"' not in page


def test_the_preview_of_an_edited_message_replaces_it_by_id_as_the_fork_does(client):
    thread = chat_thread()
    checkpoint = head(thread)
    first = engine.thread_state(thread).values["messages"][0]
    page = client.get(reverse("fork", args=[thread.pk, checkpoint])).content.decode()
    assert 'name="msg-messages-0"' in page and ">hi</textarea>" in page
    edit = {"as_node": "__start__", "msg-messages-0": "hello instead", "msg-messages-1": None}
    edit["msg-messages-1"] = engine.thread_state(thread).values["messages"][1].content
    before = everything()

    page = preview(client, thread, checkpoint, edit)

    assert everything() == before
    assert f"<code>messages[id={first.id}].content</code>" in page
    assert "&quot;hello instead&quot;" in page
    assert "<code>respond</code>" in page
    response = client.post(
        reverse("fork", args=[thread.pk, checkpoint]), {**edit, "reason": "ask differently"}
    )
    assert response.status_code == 303
    messages = engine.thread_state(thread).values["messages"]
    # Replaced where it was (same id), then answered again by the run.
    assert messages[0].id == first.id and messages[0].content == "hello instead"


def test_each_node_of_the_tree_offers_fork_and_replay_which_open_beside_it(client):
    thread = at_interrupt()
    checkpoint = head(thread)
    page = client.get(reverse("thread", args=[thread.pk])).content.decode()
    fork_url = reverse("fork", args=[thread.pk, checkpoint])
    replay_url = reverse("replay", args=[thread.pk, checkpoint])
    assert f'<a href="{fork_url}" class="button small fork" hx-get="{fork_url}"' in page
    assert f'<a href="{replay_url}" class="button small replay" hx-get="{replay_url}"' in page

    panel = client.get(fork_url, **HTMX_PANE).content.decode()
    assert panel.lstrip().startswith('<section id="fork-panel"')
    assert "Fork and run" in panel
    panel = client.get(replay_url, **HTMX_PANE).content.decode()
    assert panel.lstrip().startswith('<section id="replay-panel"')
    assert "Everything after this checkpoint executes anew" in panel
    assert "interrupts fire again" in panel


def test_a_viewer_sees_no_fork_on_the_tree_and_may_not_preview(db):
    thread = at_interrupt()
    viewer = Client()
    viewer.force_login(member("vera", role="viewer"))
    page = viewer.get(reverse("thread", args=[thread.pk])).content.decode()
    assert reverse("fork", args=[thread.pk, head(thread)]) not in page
    response = viewer.post(
        reverse("fork-preview", args=[thread.pk, head(thread)]), {"as_node": "validate"}
    )
    assert response.status_code == 403


def test_booleans_enums_and_integers_are_inputs_of_their_type():
    shape = GraphShape(("__start__", "work"), (), ("urgent", "tier", "n"), frozenset())
    schema = {
        "urgent": {"type": "boolean"},
        "tier": {"enum": ["gold", "silver"], "type": "string"},
        "n": {"type": "integer"},
    }
    current = {"urgent": True, "tier": "gold", "n": 3}

    def form(data=None):
        return ForkForm(shape, current, ["work"], data, schema=schema)

    kinds = {key.key: key.typed.root.kind for key in form().keys}
    assert kinds == {"urgent": "boolean", "tier": "choice", "n": "integer"}
    base = {"as_node": "work", "reason": "r", "state-urgent": "true", "state-tier": '"gold"'}
    edited = form({**base, "typed-urgent": "false", "typed-tier": "silver", "typed-n": "4"})
    assert edited.is_valid(), edited.errors
    assert edited.values == {"urgent": False, "tier": "silver", "n": 4}
    unchanged = form({**base, "typed-urgent": "true", "typed-tier": "gold", "typed-n": "3"})
    assert unchanged.is_valid() and unchanged.values is None
    wrong = form({**base, "typed-tier": "bronze", "typed-n": "3.5"})
    assert not wrong.is_valid()
    assert "tier: bronze is not one of the choices." in wrong.errors["typed-tier"]
    assert "n must be a whole number." in wrong.errors["typed-n"]


@pytest.mark.parametrize(
    ("key", "text", "says"),
    [
        ("amount", '"abc"', "amount: the state schema refuses this value: 'abc' is not of type"),
        ("problems", '{"a": 1}', "problems: the state schema refuses this value:"),
        ("problems", '["ok", 2]', "problems[1]: the state schema refuses this value:"),
        ("decision", '"approve"', "decision: the state schema refuses this value:"),
    ],
)
def test_a_json_box_value_the_state_schema_refuses_is_refused_on_it(client, key, text, says):
    """Found by hand: the typed input of ``amount`` refused ``abc``, but its JSON box
    wrote ``"abc"``, and ``draft`` as a string made the fork's run fail in its node."""
    thread = at_interrupt()
    checkpoint = head(thread)
    before = everything()
    data = {"as_node": "validate", "reason": "r", f"state-{key}": text}
    page = preview(client, thread, checkpoint, data).replace("&#x27;", "'")
    assert "The graph would refuse this fork" in page and says in page
    response = client.post(reverse("fork", args=[thread.pk, checkpoint]), data)
    assert response.status_code == 400
    assert list(response.context["form"].errors) == [f"state-{key}"]
    assert says in response.content.decode().replace("&#x27;", "'")
    assert everything() == before


def test_a_json_box_value_the_state_schema_takes_is_forked(client):
    thread = at_interrupt()
    data = {"as_node": "validate", "reason": "r", "state-amount": "75", "state-problems": '["a"]'}
    response = client.post(reverse("fork", args=[thread.pk, head(thread)]), data)
    assert response.status_code == 303
    assert engine.thread_state(thread).values["amount"] == 75


def test_a_visit_to_the_preview_is_a_console_page_pointing_to_the_fork_form(client):
    thread = at_interrupt()
    checkpoint = head(thread)

    response = client.get(reverse("fork-preview", args=[thread.pk, checkpoint]))

    assert response.status_code == 405
    assert response["Allow"] == "POST"
    page = response.content.decode()
    assert "<h1>Nothing to see at this address</h1>" in page
    assert '<nav aria-label="Main">' in page  # the console's layout
    assert f'href="{reverse("fork", args=[thread.pk, checkpoint])}"' in page


def test_a_message_that_only_calls_tools_shows_its_calls_in_the_transcript(client):
    thread = chat_thread()
    call = {"name": "get_weather", "args": {"city": "Leeds"}, "id": "call-1"}
    asks = {"type": "ai", "content": "", "tool_calls": [call], "id": "a-calls"}
    fork = engine.fork(thread, head(thread), {"messages": [asks]}, as_node="respond")

    page = client.get(reverse("fork", args=[thread.pk, fork.checkpoint_id])).content.decode()

    transcript = page[page.index('<ol class="transcript"') : page.index("</ol>")]
    entry = transcript[transcript.index("ai message 3") :]
    assert "calls tool <code>get_weather</code>" in entry
    assert "Leeds" in entry and "call-1" in entry


def test_a_value_a_reducer_cannot_add_is_refused_on_its_box_in_the_keys_terms(client):
    thread = at_interrupt("email_reply")
    form = {"as_node": "review", "state-feedback": "5"}

    page = preview(client, thread, head(thread), form)

    box = page[page.index('id="pv-state-feedback"') :]
    box = box[: box.index("</div>")]
    assert "feedback: this key adds what you give to its list" in box
    assert "can only concatenate" not in page  # Python's words, not the operator's
