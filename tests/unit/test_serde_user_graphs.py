"""A graph a user compiles with ``DjangoSaver`` themselves, not registered in
``DURABLE_GRAPHS``, gets the classes of its own state back (as with ``InMemorySaver``),
and a stored payload naming any other class still stays plain data."""

from __future__ import annotations

import dataclasses
import enum
import uuid
from typing import NotRequired

import pydantic
import pytest
from django.test import override_settings
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from durable.persistence.checkpoint import DjangoSaver
from durable.persistence.serde import allowlist

pytestmark = pytest.mark.django_db(transaction=True)


class Label(enum.Enum):
    FIRST = "first"


class Scored(pydantic.BaseModel):
    label: str
    score: int


@dataclasses.dataclass
class Box:
    size: int


class Tagged(pydantic.BaseModel):
    tag: Label


@dataclasses.dataclass
class Intruder:
    """In the same module as the graph's types, but in none of its schemas."""

    command: str = "rm -rf /"
    instances = 0  # not a field: no annotation

    def __post_init__(self):
        Intruder.instances += 1


class TypedState(TypedDict):
    scored: Scored
    box: Box
    tagged: Tagged
    seen: NotRequired[list]


def ask(state: TypedState) -> dict:
    interrupt("go on?")
    return {}


def after(state: TypedState) -> dict:
    # Attribute access, as a user's node does: a dict here raises AttributeError.
    return {"seen": [state["scored"].label, state["box"].size, state["tagged"].tag]}


def compiled():
    """The user's graph, compiled afresh each time, as a new process would."""
    builder = StateGraph(TypedState)
    builder.add_node("ask", ask)
    builder.add_node("after", after)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "after")
    return builder.compile(checkpointer=DjangoSaver())


VALUES = {
    "scored": Scored(label="first", score=1),
    "box": Box(3),
    "tagged": Tagged(tag=Label.FIRST),
}


def config() -> dict:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def test_the_graphs_types_are_not_registered():
    # Else the tests below would pass through DURABLE_GRAPHS, not the graph's compile.
    assert not {(__name__, c.__name__) for c in (Scored, Box, Tagged, Label)} & allowlist()


@pytest.mark.parametrize("key", ["", "0123456789abcdef"], ids=["plain", "encrypted"])
def test_a_resumed_node_and_get_state_see_the_states_own_classes(key):
    cfg = config()
    with override_settings(DURABLE_ENCRYPTION_KEY=key):
        assert compiled().invoke(VALUES, cfg)["__interrupt__"][0].value == "go on?"
        state = compiled().get_state(cfg)
        assert state.next == ("ask",) and state.interrupts
        assert state.values == VALUES
        assert [type(state.values[k]) for k in VALUES] == [Scored, Box, Tagged]
        assert type(state.values["tagged"].tag) is Label
        out = compiled().invoke(Command(resume="yes"), cfg)
    assert out["seen"] == ["first", 3, Label.FIRST]


def test_a_stored_class_outside_the_graphs_schemas_stays_plain_data():
    cfg = config()
    graph = compiled()
    graph.invoke(VALUES, cfg)
    # Written by a permissive serializer, as an attacker with database access could.
    writer = DjangoSaver(serde=JsonPlusSerializer(allowed_msgpack_modules=True))
    head = graph.get_state(cfg).config
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"box": Intruder(), "scored": Scored(label="x", score=2)}
    checkpoint["channel_versions"] = {"box": "9", "scored": "9"}
    writer.put(head, checkpoint, {"source": "update", "step": 9}, checkpoint["channel_versions"])
    Intruder.instances = 0

    values = compiled().get_state(cfg).values
    assert Intruder.instances == 0
    assert values["box"] == {"command": "rm -rf /"}  # plain data, not an Intruder
    assert values["scored"] == Scored(label="x", score=2)  # the graph's own class revives
