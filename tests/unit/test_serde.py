"""What the saver stores and revives: round trips, refusals, allowlist, encryption."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import io
import uuid
from fractions import Fraction
from typing import Annotated

import pydantic
import pytest
from django.db import connection
from django.test import override_settings
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from durable.models import Checkpoint, CheckpointBlob, CheckpointWrite
from durable.persistence.checkpoint import DjangoSaver

pytestmark = pytest.mark.django_db(transaction=True)


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Invoice(pydantic.BaseModel):
    number: str
    total: decimal.Decimal


@dataclasses.dataclass
class Intruder:
    """A class no graph declares: a stored payload naming it must not revive it."""

    command: str = "rm -rf /"
    instances = 0  # not a field: no annotation

    def __post_init__(self):
        Intruder.instances += 1


class RoundTripState(TypedDict):
    colour: Colour
    point: Point
    invoice: Invoice
    messages: Annotated[list, add_messages]


def build_round_trip_graph():
    builder = StateGraph(RoundTripState)
    builder.add_node("noop", lambda state: {})
    builder.set_entry_point("noop")
    return builder


GRAPHS = {"round_trip": "tests.unit.test_serde.build_round_trip_graph"}

VALUES = {
    "when": datetime.datetime(2026, 11, 30, 6, 30, tzinfo=datetime.UTC),
    "day": datetime.date(2026, 11, 30),
    "colour": Colour.RED,
    "point": Point(1, 2),
    "invoice": Invoice(number="INV-1", total=decimal.Decimal("12.50")),
    "messages": [
        HumanMessage("pay it", id="m1"),
        AIMessage("", id="m2", tool_calls=[{"name": "pay", "args": {"amount": 3}, "id": "c1"}]),
        ToolMessage("paid", tool_call_id="c1", id="m3"),
    ],
    "raw": b"\x00\xffbytes",
    "tags": {"a", "b"},
    "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "amount": decimal.Decimal("0.10"),
    "nested": {"list": [1, {"deep": [None, True, 2.5]}], "text": "ü"},
}


def save(saver, values, thread_id="rt"):
    cp = empty_checkpoint()
    cp["channel_values"] = values
    versions = {k: "1" for k in values}
    cp["channel_versions"] = versions
    cfg = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    return saver.put(cfg, cp, {"source": "input", "step": -1, "owner": "ops"}, versions)


@override_settings(DURABLE_GRAPHS=GRAPHS)
def test_values_round_trip_through_a_checkpoint_and_writes():
    saver = DjangoSaver()
    stored = save(saver, VALUES)
    saver.put_writes(stored, list(VALUES.items()), task_id="t1")
    tup = saver.get_tuple(stored)
    assert tup.checkpoint["channel_values"] == VALUES
    assert {channel: value for _, channel, value in tup.pending_writes} == VALUES
    assert type(tup.checkpoint["channel_values"]["point"]) is Point
    assert tup.checkpoint["channel_values"]["messages"][1].tool_calls[0]["args"] == {"amount": 3}


@pytest.mark.parametrize(
    ("value", "type_name"),
    [(2**70, "int"), (Fraction(1, 3), "Fraction"), (io.StringIO("x"), "StringIO")],
)
def test_a_value_the_serializer_cannot_encode_names_channel_and_type(value, type_name):
    saver = DjangoSaver()
    with pytest.raises(TypeError, match=rf"channel 'bad': .*type {type_name}"):
        save(saver, {"ok": [1], "bad": value})
    stored = save(saver, {"ok": [1]}, thread_id="fine")
    with pytest.raises(TypeError, match=rf"write to channel 'bad': .*type {type_name}"):
        saver.put_writes(stored, [("bad", value)], task_id="t1")
    assert Checkpoint.objects.filter(thread_id="rt").count() == 0
    assert CheckpointWrite.objects.count() == 0


@override_settings(DURABLE_GRAPHS=GRAPHS)
def test_a_stored_class_outside_the_allowlist_is_not_instantiated():
    # Written by a permissive serializer (as an attacker with database access could)...
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    writer = DjangoSaver(serde=JsonPlusSerializer(allowed_msgpack_modules=True))
    stored = save(writer, {"intruder": Intruder(), "point": Point(3, 4)})
    Intruder.instances = 0
    # ...and read by the console's saver.
    values = DjangoSaver().get_tuple(stored).checkpoint["channel_values"]
    assert Intruder.instances == 0
    assert values["intruder"] == {"command": "rm -rf /"}  # plain data, not an Intruder
    assert values["point"] == Point(3, 4)  # a registered graph's type still revives


@override_settings(
    DURABLE_GRAPHS=GRAPHS, DURABLE_SERDE_ALLOWLIST=["tests.unit.test_serde.Intruder"]
)
def test_the_allowlist_setting_admits_more_classes():
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    writer = DjangoSaver(serde=JsonPlusSerializer(allowed_msgpack_modules=True))
    stored = save(writer, {"intruder": Intruder()})
    assert isinstance(
        DjangoSaver().get_tuple(stored).checkpoint["channel_values"]["intruder"], Intruder
    )


SECRET = "sk-live-4242-very-secret"


def raw_bytes() -> bytes:
    with connection.cursor() as cur:
        found = b""
        for model, column in (
            (Checkpoint, "checkpoint"),
            (CheckpointBlob, "blob"),
            (CheckpointWrite, "blob"),
        ):
            cur.execute(f"SELECT {column} FROM {model._meta.db_table}")
            found += b"".join(bytes(row[0] or b"") for row in cur.fetchall())
        return found


@pytest.mark.parametrize("key", ["0123456789abcdef", "0123456789abcdef0123456789abcdef"])
def test_encryption_at_rest(key):
    with override_settings(DURABLE_ENCRYPTION_KEY=key):
        saver = DjangoSaver()
        stored = save(saver, {"api_key": SECRET, "notes": [SECRET]})
        saver.put_writes(stored, [("notes", [SECRET])], task_id="t1")
        assert SECRET.encode() not in raw_bytes()
        tup = saver.get_tuple(stored)
        assert tup.checkpoint["channel_values"] == {"api_key": SECRET, "notes": [SECRET]}
        assert tup.pending_writes == [("t1", "notes", [SECRET])]
        # Metadata stays plain and can be filtered.
        assert [t.metadata["owner"] for t in saver.list(None, filter={"owner": "ops"})] == ["ops"]
    with override_settings(DURABLE_ENCRYPTION_KEY="another-key-1234"):
        with pytest.raises(ValueError, match="MAC check failed"):
            DjangoSaver().get_tuple(stored)
    # Without encryption the secret would have been there in the clear.
    save(DjangoSaver(), {"api_key": SECRET}, thread_id="plain")
    assert SECRET.encode() in raw_bytes()


def test_a_key_of_the_wrong_length_is_refused():
    from django.core.exceptions import ImproperlyConfigured

    with override_settings(DURABLE_ENCRYPTION_KEY="short"):
        with pytest.raises(ImproperlyConfigured, match="16, 24 or 32 bytes"):
            DjangoSaver()
