"""``durable.engine.preview_fork``: the state a fork would write (after the channels'
reducers) and what LangGraph would run next from it, computed by LangGraph on a
sandbox: it matches the real fork's checkpoint, and writes nothing."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from durable import engine
from durable.graphs import get_graph
from durable.models import Thread
from tests.helpers.threads import at_interrupt, everything, head

pytestmark = pytest.mark.django_db(transaction=True)


def chat_thread() -> Thread:
    """A chat thread (``MessagesState``) that answered one human message, in this process."""
    thread = engine.create_thread("chat")
    get_graph("chat").invoke(
        {"messages": [{"type": "human", "content": "hi"}]}, engine.config_for(thread)
    )
    return thread


def test_a_plain_key_is_replaced_and_the_next_node_is_langgraphs():
    thread = at_interrupt()
    [step_0] = [s for s in engine.thread_history(thread) if s.metadata["step"] == 0]
    checkpoint = step_0.config["configurable"]["checkpoint_id"]
    before = everything()

    preview = engine.preview_fork(thread, checkpoint, {"amount": 5}, as_node="__start__")

    assert everything() == before
    assert preview.before["amount"] == 42.5
    assert preview.after["amount"] == 5
    assert preview.next == ("validate",)
    forked = engine.fork(thread, checkpoint, {"amount": 5}, as_node="__start__")
    real = engine.state_at(thread, forked.checkpoint_id)
    assert real.values == preview.after
    assert real.next == preview.next


def test_add_messages_appends_a_new_message_as_the_fork_does():
    thread = chat_thread()
    checkpoint = head(thread)
    new = {"type": "human", "content": "and again", "id": "m-new"}
    before = everything()

    preview = engine.preview_fork(thread, checkpoint, {"messages": [new]}, as_node="__start__")

    assert everything() == before
    assert [m.content for m in preview.after["messages"]][-1] == "and again"
    assert len(preview.after["messages"]) == len(preview.before["messages"]) + 1
    assert preview.next == ("respond",)
    forked = engine.fork(thread, checkpoint, {"messages": [new]}, as_node="__start__")
    assert engine.state_at(thread, forked.checkpoint_id).values == preview.after


def test_add_messages_replaces_a_message_of_the_same_id_as_the_fork_does():
    thread = chat_thread()
    checkpoint = head(thread)
    first = engine.state_at(thread, checkpoint).values["messages"][0]
    edited = {"type": "human", "content": "hello instead", "id": first.id}

    preview = engine.preview_fork(thread, checkpoint, {"messages": [edited]}, as_node="__start__")

    assert len(preview.after["messages"]) == len(preview.before["messages"])
    assert preview.after["messages"][0] == HumanMessage("hello instead", id=first.id)
    assert preview.after["messages"][1] == preview.before["messages"][1]
    forked = engine.fork(thread, checkpoint, {"messages": [edited]}, as_node="__start__")
    assert engine.state_at(thread, forked.checkpoint_id).values == preview.after


def test_an_update_the_graph_refuses_is_refused_on_its_field_and_writes_nothing():
    thread = at_interrupt()
    checkpoint = head(thread)
    before = everything()

    with pytest.raises(engine.InvalidRequest) as refused:
        engine.preview_fork(thread, checkpoint, {"amount": 1}, as_node="nowhere")
    assert refused.value.field == "as_node"
    with pytest.raises(engine.InvalidRequest) as refused:
        engine.preview_fork(thread, checkpoint, {"no_such_key": 1}, as_node="validate")
    assert refused.value.field.startswith("values")
    assert everything() == before


def test_a_value_a_list_reducer_cannot_add_is_refused_in_the_keys_terms():
    # email_reply's feedback is Annotated[list[str], operator.add]: 5 is no list to add.
    thread = at_interrupt("email_reply")
    checkpoint = head(thread)
    before = everything()

    for refuse in (engine.preview_fork, engine.fork):
        with pytest.raises(engine.InvalidRequest) as refused:
            refuse(thread, checkpoint, {"feedback": 5}, as_node="review")
        assert refused.value.field == "values.feedback"
        message = refused.value.message
        assert message.startswith("feedback: this key adds what you give to its list")
        assert 'give a list, e.g. ["…"]' in message
        assert "concatenate" not in message
    assert everything() == before
    taken = engine.preview_fork(thread, checkpoint, {"feedback": ["shorter"]}, as_node="review")
    assert taken.after["feedback"][-1] == "shorter"
