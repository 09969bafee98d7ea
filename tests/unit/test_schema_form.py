"""Forms built from a JSON Schema (``dashboard.forms.schema_form``): each kind of part
becomes its field and comes back as the same value; bad input is an error on the field
at fault, naming it; and through the console, a generic interrupt's ``response_schema``
and a graph's input schema give forms that answer and start runs without JSON, while
the JSON box still works and a refused form changes nothing."""

from __future__ import annotations

import json

import pytest
from django import forms
from django.urls import reverse

from dashboard.forms.schema_form import SchemaFields
from durable import engine
from durable.graphs import example_input, graph_names
from durable.models import Assistant, Run, Tenant
from tests.helpers.threads import EXPENSE, at_interrupt, everything

EVERY_KIND = {
    "$defs": {
        "Address": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
            "required": ["city"],
        }
    },
    "type": "object",
    "properties": {
        "approved": {"type": "boolean", "title": "Approve"},
        "colour": {"enum": ["red", "green"]},
        "level": {"enum": [1, 2, 3]},
        "count": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number"},
        "code": {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[A-Z]+$"},
        "mail": {"type": "string", "format": "email"},
        "due": {"type": "string", "format": "date"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "scores": {"type": "array", "items": {"type": "integer"}},
        "sizes": {"type": "array", "items": {"enum": ["S", "M", "L"]}},
        "address": {"$ref": "#/$defs/Address"},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "extra": {"type": "object", "additionalProperties": True},
    },
    "required": ["approved", "note"],
}
FULL = {
    "approved": False,
    "colour": "green",
    "level": 2,
    "count": 3,
    "ratio": 0.5,
    "code": "AB",
    "mail": "ada@example.com",
    "due": "2026-12-03",
    "tags": ["one", "two words"],
    "scores": [1, 20],
    "sizes": ["S", "L"],
    "address": {"city": "London", "zip": "N1"},
    "note": "a line\nand another",
    "extra": {"any": [1, {"thing": None}]},
}
KINDS = {
    "approved": "boolean",
    "colour": "choice",
    "level": "choice",
    "count": "integer",
    "ratio": "number",
    "code": "string",
    "mail": "email",
    "due": "date",
    "tags": "lines",
    "scores": "lines",
    "sizes": "choices",
    "address": "object",
    "note": "text",
    "extra": "json",
}


class _Form(forms.Form):
    pass


def built(schema, data=None, initial=None, **options):
    """A form holding the fields of ``schema`` (prefix ``answer``), bound to ``data``."""
    form = _Form(data, auto_id="%s")

    def add(name, field):
        form.fields[name] = field
        return form[name]

    kwargs = {} if initial is None else {"initial": initial}
    return form, SchemaFields(add, "answer", schema, **kwargs, **options)


def posted(typed: SchemaFields) -> dict:
    """What a browser sends of the fields as they start."""
    return {leaf.name: leaf.field.initial for leaf in typed.root.leaves}


def value_of(schema, data, **options):
    form, typed = built(schema, data, **options)
    assert form.is_valid(), form.errors
    return typed.value(form.cleaned_data)


def refusal(schema, data) -> dict:
    """The errors, by field name, of ``data`` refused by the form or by ``value``."""
    form, typed = built(schema, data)
    if not form.is_valid():
        return form.errors
    with pytest.raises(forms.ValidationError) as refused:
        typed.value(form.cleaned_data)
    return refused.value.message_dict


def test_each_kind_of_part_has_its_field_and_comes_back_as_the_same_value():
    form, typed = built(EVERY_KIND, initial=FULL)
    by_key = {node.key: node for node in typed.root.children}
    assert {key: node.kind for key, node in by_key.items()} == KINDS
    assert by_key["approved"].label == "Approve" and by_key["approved"].required
    assert by_key["note"].nullable and by_key["note"].required
    assert [c.name for c in by_key["address"].children] == [
        "answer.address.city",
        "answer.address.zip",
    ]
    assert by_key["address"].children[0].required  # from the $ref'd definition
    assert by_key["tags"].field.initial == "one\ntwo words"
    assert by_key["count"].limits == "1 to 10"
    assert by_key["code"].limits == "2 to 4 characters, matching ^[A-Z]+$"

    assert value_of(EVERY_KIND, posted(typed)) == FULL
    assert engine.checks.schema_error(FULL, EVERY_KIND) is None


def test_fields_left_empty_leave_their_keys_out_and_a_required_nullable_is_null():
    data = {"answer.approved": "true"}
    assert value_of(EVERY_KIND, data) == {"approved": True, "note": None}
    # A part of an optional object filled makes the object's required keys needed.
    errors = refusal(EVERY_KIND, {**data, "answer.address.zip": "N1"})
    assert errors == {"answer.address.city": ["address.city is required."]}


@pytest.mark.parametrize(
    ("field", "text", "message"),
    [
        ("count", "11", "count: at most 10."),
        ("count", "0", "count: at least 1."),
        ("count", "2.5", "count must be a whole number."),
        ("ratio", "lots", "ratio must be a number."),
        ("code", "A", "code: at least 2 characters (it has 1)."),
        ("code", "ABCDE", "code: at most 4 characters (it has 5)."),
        ("code", "ab", "code must match the pattern ^[A-Z]+$."),
        ("mail", "not mail", "mail must be an email address."),
        ("due", "3 Dec", "due must be a date (YYYY-MM-DD)."),
        ("colour", "blue", "colour: blue is not one of the choices."),
        ("scores", "1\nmany", "scores: line 2 is not a whole number."),
        ("scores", "1\n" + "9" * 5000, "scores: line 2 is not a whole number."),
        ("extra", "9" * 5000, "extra is not valid JSON: Exceeds the limit (4300 digits)"),
        ("extra", "{nope", "extra is not valid JSON"),
        ("note", "a\x00b", "note: contains a NUL character"),
    ],
)
def test_bad_input_is_an_error_on_its_field_naming_it(field, text, message):
    errors = refusal(EVERY_KIND, {"answer.approved": "true", f"answer.{field}": text})
    assert list(errors) == [f"answer.{field}"]
    assert message in errors[f"answer.{field}"][0]


def test_a_required_choice_left_empty_is_named():
    assert refusal(EVERY_KIND, {"answer.note": "x"}) == {
        "answer.approved": ["approved is required."]
    }


def test_a_schema_that_gives_no_fields_is_left_to_the_json_box():
    for schema in ({"type": "object"}, {"type": "array", "items": {"type": "object"}}, {}):
        assert not built(schema)[1].usable
    # A schema that is not an object is one field.
    form, typed = built({"type": "integer", "maximum": 3})
    assert typed.usable and typed.root.name == "answer"
    assert value_of({"type": "integer"}, {"answer": "2"}) == 2


def test_a_schema_with_odd_parts_still_gives_a_form():
    odd = {
        "type": "object",
        "required": [["not a key"], 3, "a"],
        "properties": {
            "a": {"type": "strin"},
            "b": {"$ref": "#/$defs/Missing"},
            "c": {"$ref": "https://example.com/schema.json"},
            "d": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "e": {"type": ["integer", "null"], "default": "not a number", "title": 5},
            "f": {"enum": [{"x": 1}, None]},
            "g": {"type": "string", "pattern": "("},
            "h": {"properties": "not a dict"},
        },
    }
    form, typed = built(odd)
    kinds = {n.key: n.kind for n in typed.root.children}
    expected = ["json"] * 4 + ["integer", "choice", "string", "json"]
    assert kinds == dict(zip("abcdefgh", expected, strict=True))
    assert typed.root.children[4].label == "5" and typed.root.children[4].field.initial == ""
    assert value_of(odd, {"answer.a": '"x"', "answer.f": '{"x": 1}', "answer.g": "(("}) == {
        "a": "x",
        "f": {"x": 1},
        "g": "((",
    }


def test_a_recursive_schema_stops_in_a_json_box():
    tree = {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "child": {"$ref": "#/$defs/Node"}},
            }
        },
        "$ref": "#/$defs/Node",
    }
    form, typed = built(tree)
    depth, node = 0, typed.root
    while node.kind == "object":
        node, depth = node.children[1], depth + 1
    assert node.kind == "json" and depth <= 7
    assert value_of(tree, {"answer.name": "a", "answer.child.name": "b"}) == {
        "name": "a",
        "child": {"name": "b"},
    }


def test_an_error_at_a_json_path_is_shown_on_the_deepest_field_it_reaches():
    form, typed = built(EVERY_KIND)
    assert typed.name_at(["address", "city"]) == "answer.address.city"
    assert typed.name_at(["tags", 3]) == "answer.tags"
    assert typed.name_at([]) == "answer.approved"


# -- through the console -----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_parallel_review_is_answered_with_its_fields(client):
    thread = at_interrupt("parallel_review")
    ids = [i.id for i in engine.pending_interrupts(thread)]
    page = client.get(reverse("inbox-thread", args=[thread.pk])).content.decode()
    for iid in ids:
        assert f'name="answer-{iid}.approved" id="answer-{iid}.approved-1" value="true"' in page
        assert (
            f'<label for="answer-{iid}.comment">Comment'
            ' <span class="small">(at most 2000 characters)</span></label>'
        ) in page
    assert "<summary>Answer as JSON</summary>" in page

    response = client.post(
        reverse("resume", args=[thread.pk]),
        {
            f"answer-{ids[0]}.approved": "true",
            f"answer-{ids[1]}.approved": "false",
            f"answer-{ids[1]}.comment": "Cap the late fee.",
        },
    )

    assert response.status_code == 303
    run = thread.runs.get(kind=Run.Kind.RESUME)
    assert run.command["resume"] == {
        ids[0]: {"approved": True},
        ids[1]: {"approved": False, "comment": "Cap the late fee."},
    }


@pytest.mark.django_db(transaction=True)
def test_a_typed_answer_refused_is_shown_on_its_field_and_changes_nothing(client):
    thread = at_interrupt("parallel_review")
    ids = [i.id for i in engine.pending_interrupts(thread)]
    before = everything()

    response = client.post(
        reverse("resume", args=[thread.pk]),
        {f"answer-{ids[0]}.approved": "true", f"answer-{ids[1]}.comment": "x" * 2001},
    )

    page = response.content.decode()
    assert response.status_code == 400
    assert f'aria-describedby="answer-{ids[1]}.comment-errors"' in page
    assert "comment: at most 2000 characters (it has 2001)." in page
    assert everything() == before

    response = client.post(
        reverse("resume", args=[thread.pk]), {f"answer-{ids[0]}.approved": "true"}
    )
    assert response.status_code == 400
    assert f'id="answer-{ids[1]}.approved-errors"' in response.content.decode()
    assert "approved is required." in response.content.decode()
    assert everything() == before


@pytest.mark.django_db(transaction=True)
def test_the_json_box_is_taken_instead_of_the_fields_when_filled(client):
    thread = at_interrupt("parallel_review")
    ids = [i.id for i in engine.pending_interrupts(thread)]
    before = everything()
    refused = client.post(
        reverse("resume", args=[thread.pk]),
        {f"answer-{i}.approved": "true" for i in ids} | {f"answer-{ids[1]}": '{"approved": 1}'},
    )
    page = refused.content.decode()
    assert refused.status_code == 400
    assert "does not match its response_schema at approved" in page
    assert f'id="answer-{ids[1]}-errors"' in page
    assert everything() == before

    response = client.post(
        reverse("resume", args=[thread.pk]),
        {f"answer-{ids[0]}.approved": "true", f"answer-{ids[1]}": '{"approved": true}'},
    )
    assert response.status_code == 303
    run = thread.runs.get(kind=Run.Kind.RESUME)
    assert run.command["resume"] == {ids[0]: {"approved": True}, ids[1]: {"approved": True}}


@pytest.mark.django_db(transaction=True)
def test_a_run_starts_from_the_fields_of_the_graphs_input_schema(client):
    page = client.get(reverse("threads")).content.decode()
    assert 'id="expense_approval-input.amount" name="input.amount" value="120.5"' in page
    assert "<summary>Input as JSON</summary>" in page
    assert "The graph&#x27;s input: what an employee claims." in page  # the schema's description

    response = client.post(
        reverse("start-run"),
        {
            "graph": "expense_approval",
            "input.employee": "Grace Hopper",
            "input.amount": "42",
            "input.description": "Taxi",
        },
    )

    assert response.status_code == 303
    assert Run.objects.get().input == {
        "employee": "Grace Hopper",
        "amount": 42,
        "description": "Taxi",
    }


@pytest.mark.django_db(transaction=True)
def test_a_start_field_refused_is_shown_on_it_and_starts_nothing(client):
    before = everything()
    response = client.post(
        reverse("start-run"),
        {"graph": "expense_approval", "input.employee": "Ada", "input.amount": "lots"},
    )
    page = response.content.decode()
    assert response.status_code == 400
    assert 'aria-describedby="expense_approval-input.amount-errors"' in page
    assert "amount must be a number." in page
    assert everything() == before

    # Text the database cannot hold, found by the engine, lands on its field too.
    response = client.post(
        reverse("start-run"), {"graph": "expense_approval", "input.employee": "A\x00B"}
    )
    assert response.status_code == 400
    assert 'id="expense_approval-input.employee-errors"' in response.content.decode()
    assert everything() == before


@pytest.mark.django_db(transaction=True)
def test_every_graph_starts_from_its_fields_as_they_come(client):
    for graph in graph_names():
        form = [
            f for f in client.get(reverse("threads")).context["start_forms"] if f["graph"] == graph
        ][0]["form"]
        data = {"graph": graph}
        if form.typed is not None:
            data |= {leaf.name: leaf.field.initial for leaf in form.typed.root.leaves}
        else:
            data["input"] = json.dumps(example_input(graph))
        response = client.post(reverse("start-run"), data)
        assert response.status_code == 303, (graph, response.content.decode()[:2000])
        assert Run.objects.order_by("-pk")[0].input == example_input(graph), graph


@pytest.mark.django_db(transaction=True)
def test_an_assistants_run_starts_from_its_graphs_fields(client):
    made = engine.create_assistant(Tenant.default(), "expense_approval", name="Claims")
    url = reverse("assistant", args=[made.assistant_id])
    assert 'name="input.employee"' in client.get(url).content.decode()

    response = client.post(
        reverse("assistant-run", args=[made.assistant_id]),
        {**{f"input.{k}": str(v) for k, v in EXPENSE.items()}, "input": ""},
    )

    assert response.status_code == 303
    run = Run.objects.get()
    assert run.input == EXPENSE and run.assistant == Assistant.objects.get()
