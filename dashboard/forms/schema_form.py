"""A form built from a JSON Schema: ``SchemaFields`` adds to a Django form one field per
leaf of the schema, and turns the submitted fields back into the JSON value, which the
caller then checks as it checks a value typed as JSON (an interrupt's
``response_schema``, a graph's input schema).

The schema's parts, by kind (``Node.kind``):

- ``object`` (``properties``): a fieldset of its properties, whose fields are named
  ``<prefix>.<key>``, ``<prefix>.<key>.<key>`` below;
- ``boolean``: yes / no (and "not set" when it may be left out);
- ``choice`` (``enum``, ``const``): one of its values; ``choices``: an array of an
  ``enum`` of strings, as checkboxes;
- ``integer``, ``number`` (``minimum``, ``maximum``); ``string`` and ``text`` (one line,
  several: ``minLength``, ``maxLength``, ``pattern``), ``email`` and ``date`` (``format``);
- ``lines``: an array of strings or numbers, one item per line;
- ``json``: anything else, as JSON in a box.

Local ``$ref`` (``#/$defs/...``), a single ``allOf``, and an ``anyOf``/``oneOf`` or type
list of one type and ``null`` (an empty field then gives ``null`` where the key is
required) are read through. A field left empty leaves its key out; a key the schema
requires, left empty, is an error on its field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

from django import forms
from django.core.validators import RegexValidator
from django.forms import BoundField

from dashboard.forms.fields import nul_message, parse_json

# Deeper parts, and parts past this many fields, are one JSON box each: a form of a
# huge or recursive schema stays a form a person can fill.
MAX_DEPTH = 6
MAX_FIELDS = 150
# A string this long (or with a newline) is edited in a textarea.
LONG_TEXT = 80
SCALAR_TYPES = ("string", "integer", "number", "boolean")
_SEGMENT = re.compile(r"[\w-]+")


class _Missing:
    def __repr__(self):
        return "MISSING"


MISSING = _Missing()  # what an empty field gives: its key is left out


@dataclass
class Node:
    """One part of the schema as the form shows it. ``name`` is its field's name (of an
    object: the prefix of its children's); ``path`` the keys down to it (``address.city``,
    what errors say); ``label`` its ``title`` or key; ``help`` its ``description``;
    ``required`` whether its parent's ``required`` lists it; ``nullable`` whether it may be
    ``null``; ``choices`` ``(token, label)`` of a ``choice``/``choices``/``boolean``;
    ``field`` its bound field (``None`` for an object)."""

    kind: str
    name: str
    path: str
    key: str | None
    label: str
    help: str = ""
    required: bool = False
    nullable: bool = False
    schema: dict = dc_field(default_factory=dict)
    children: list[Node] = dc_field(default_factory=list)
    choices: list[tuple[str, str]] = dc_field(default_factory=list)
    values: dict[str, Any] = dc_field(default_factory=dict)
    item_kind: str | None = None
    field: BoundField | None = None

    @property
    def id(self) -> str:
        return self.field.auto_id if self.field is not None else self.name

    @property
    def limits(self) -> str:
        """The schema's limits of this part in words ("1 to 10", "at most 2000
        characters"), or ``""``."""
        s, said = self.schema, []
        low, high = s.get("minimum"), s.get("maximum")
        if self.kind in ("integer", "number") and (low is not None or high is not None):
            if low is not None and high is not None:
                said.append(f"{low} to {high}")
            else:
                said.append(f"at least {low}" if low is not None else f"at most {high}")
        if self.kind in ("string", "text"):
            shortest, longest = _int(s.get("minLength")), _int(s.get("maxLength"))
            if shortest and longest is not None:
                said.append(f"{shortest} to {longest} characters")
            elif longest is not None:
                said.append(f"at most {longest} characters")
            elif shortest:
                said.append(f"at least {shortest} characters")
            if isinstance(s.get("pattern"), str):
                said.append(f"matching {s['pattern']}")
        return ", ".join(said)

    @property
    def leaves(self) -> list[Node]:
        if self.kind != "object":
            return [self]
        return [leaf for child in self.children for leaf in child.leaves]

    @property
    def first_name(self) -> str | None:
        """The name of the first field at or below this part (``None``: none)."""
        leaves = self.leaves
        return leaves[0].name if leaves else None


class SchemaFields:
    """The fields of JSON Schema ``schema`` added to a form through ``add(name, field)``
    (which returns the bound field), named from ``prefix``; ``initial`` fills them
    (else each part's ``default``). With ``keys_optional`` no key of the top object is
    required (a graph takes a partial input).

    ``root`` is the tree of ``Node``; ``usable`` is false when the schema gives no fields
    (its top is ``json``: the caller keeps its JSON box alone). ``value(cleaned)`` turns
    the cleaned fields into the JSON value, raising ``ValidationError({name: message})``
    on the fields at fault; ``name_at(path)`` is the field an error at a JSON path
    (keys and indexes) is shown on."""

    def __init__(
        self,
        add: Callable[[str, forms.Field], BoundField],
        prefix: str,
        schema: dict,
        initial: Any = MISSING,
        keys_optional: bool = False,
    ):
        self._add = add
        self._root_schema = schema
        self._count = 0
        resolved, nullable = _resolve(schema, schema)
        self.root = self._node(
            resolved, prefix, "", None, initial, required=True, nullable=nullable, depth=0
        )
        if keys_optional and self.root.kind == "object":
            for child in self.root.children:
                child.required = False
        self.usable = self.root.kind != "json"
        if self.root.kind == "object" and not self.root.children:
            self.usable = False

    # -- building ------------------------------------------------------------------------

    def _node(self, schema, name, path, key, initial, *, required, nullable, depth) -> Node:
        label = str(schema.get("title") or key or "answer")
        node = Node(
            kind=_kind(schema),
            name=name,
            path=path or label,
            key=key,
            label=label,
            help=str(schema.get("description") or ""),
            required=required,
            nullable=nullable,
            schema=schema,
        )
        if initial is MISSING and "default" in schema:
            initial = schema["default"]
        if node.kind == "object" and depth >= MAX_DEPTH:
            node.kind = "json"
        if node.kind == "object":
            self._children(node, initial if isinstance(initial, dict) else {}, depth)
            return node
        self._count += 1
        if self._count > MAX_FIELDS:
            node.kind = "json"
        if node.kind == "string" and isinstance(initial, str):
            if "\n" in initial or len(initial) > LONG_TEXT:
                node.kind = "text"
        node.field = self._add(name, self._field(node))
        node.field.initial = _initial_text(node, initial)
        return node

    def _children(self, node: Node, initial: dict, depth: int) -> None:
        required = node.schema.get("required")
        required = (
            {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
        )
        for i, (key, prop) in enumerate(node.schema["properties"].items()):
            segment = key if _SEGMENT.fullmatch(key) else f"_{i}"
            resolved, nullable = _resolve(prop, self._root_schema)
            node.children.append(
                self._node(
                    resolved,
                    f"{node.name}.{segment}",
                    f"{node.path}.{key}" if node.key is not None else key,
                    key,
                    initial.get(key, MISSING),
                    required=key in required,
                    nullable=nullable,
                    depth=depth + 1,
                )
            )

    def _field(self, node: Node) -> forms.Field:
        """The Django field of leaf ``node``; never ``required``: an empty field leaves
        its key out, and ``value`` refuses a required key left empty."""
        s, kind, path = node.schema, node.kind, node.path
        messages = {
            "null_characters_not_allowed": nul_message(path),
            "invalid_choice": f"{path}: %(value)s is not one of the choices.",
            "min_length": f"{path}: at least %(limit_value)d characters (it has %(show_value)d).",
            "max_length": f"{path}: at most %(limit_value)d characters (it has %(show_value)d).",
            "min_value": f"{path}: at least %(limit_value)s.",
            "max_value": f"{path}: at most %(limit_value)s.",
        }
        if kind == "boolean":
            node.choices = [("true", "Yes"), ("false", "No")]
            return forms.ChoiceField(required=False, choices=node.choices, error_messages=messages)
        if kind in ("choice", "choices"):
            options = _options(s) if kind == "choice" else _options(_items(s, self._root_schema))
            node.values = {_token(v): v for v in options}
            node.choices = [(_token(v), _choice_label(v)) for v in options]
            field_class = forms.ChoiceField if kind == "choice" else forms.MultipleChoiceField
            return field_class(required=False, choices=node.choices, error_messages=messages)
        if kind == "integer":
            messages["invalid"] = f"{path} must be a whole number."
            return forms.IntegerField(required=False, error_messages=messages, **_limits(s))
        if kind == "number":
            messages["invalid"] = f"{path} must be a number."
            return NumberField(required=False, error_messages=messages, **_limits(s))
        if kind == "email":
            messages["invalid"] = f"{path} must be an email address."
            return forms.EmailField(required=False, error_messages=messages)
        if kind == "date":
            messages["invalid"] = f"{path} must be a date (YYYY-MM-DD)."
            return forms.DateField(
                required=False, error_messages=messages, input_formats=["%Y-%m-%d"]
            )
        if kind in ("string", "text"):
            validators = []
            if isinstance(s.get("pattern"), str) and _compiles(s["pattern"]):
                validators.append(RegexValidator(s["pattern"]))
                messages["invalid"] = f"{path} must match the pattern {s['pattern']}."
            return forms.CharField(
                required=False,
                strip=False,
                validators=validators,
                error_messages=messages,
                min_length=_int(s.get("minLength")),
                max_length=_int(s.get("maxLength")),
            )
        if kind == "lines":
            node.item_kind = _kind(_items(s, self._root_schema))
        return forms.CharField(required=False, strip=False, error_messages=messages)

    # -- reading back --------------------------------------------------------------------

    def value(self, cleaned: dict) -> Any:
        """The JSON value of the cleaned fields (``form.cleaned_data``). Raises
        ``ValidationError({name: message})`` for a required part left empty, a line or
        a JSON box that does not parse."""
        value = _gather(self.root, cleaned, force=True)
        if value is MISSING:
            if self.root.nullable:
                return None
            raise forms.ValidationError({self.root.name: f"{self.root.path} is required."})
        return value

    def name_at(self, path) -> str | None:
        """The field an error at JSON path ``path`` (keys and indexes) is shown on: the
        deepest part the path reaches, its first field."""
        node = self.root
        for step in path:
            child = next((c for c in node.children if c.key == step), None)
            if child is None:
                break
            node = child
        return node.first_name or self.root.first_name


class NumberField(forms.FloatField):
    """A JSON number: an integer when typed as one (``3``, not ``3.0``)."""

    def to_python(self, value):
        number = super().to_python(value)
        if number is not None and re.fullmatch(r"\s*[-+]?\d+\s*", str(value)):
            return int(str(value))
        return number


def _gather(node: Node, cleaned: dict, force: bool = False) -> Any:
    if node.kind == "object":
        return _object(node, cleaned, force)
    return _leaf(node, cleaned.get(node.name))


def _object(node: Node, cleaned: dict, force: bool) -> Any:
    """The object of ``node``'s children; ``MISSING`` when none was filled (unless
    ``force``), so an optional part left empty is left out."""
    values, errors, given, missing = {}, {}, force, []
    for child in node.children:
        try:
            value = _gather(child, cleaned)
        except forms.ValidationError as exc:
            errors.update(exc.message_dict)
            given = True
            continue
        if value is MISSING:
            missing.append(child)
        else:
            values[child.key] = value
            given = True
    if not given:
        return MISSING
    for child in missing:
        if not child.required:
            continue
        if child.nullable:
            values[child.key] = None
        elif (name := child.first_name) is not None:
            errors.setdefault(name, [f"{child.path} is required."])
    if errors:
        raise forms.ValidationError(errors)
    return values


def _leaf(node: Node, raw: Any) -> Any:
    kind = node.kind
    if raw is None or raw == "" or raw == []:
        return MISSING
    if kind == "boolean":
        return raw == "true"
    if kind == "choice":
        return node.values[raw]
    if kind == "choices":
        return [node.values[token] for token in raw]
    if kind == "date":
        return raw.isoformat()
    if kind == "lines":
        return _lines(node, raw)
    if kind == "json":
        if not raw.strip():
            return MISSING
        try:
            return parse_json(raw, f"{node.path} is")
        except forms.ValidationError as exc:
            raise forms.ValidationError({node.name: exc.messages}) from None
    return raw


def _lines(node: Node, text: str) -> Any:
    items = [line.strip() for line in text.splitlines() if line.strip()]
    if not items:
        return MISSING
    if node.item_kind not in ("integer", "number"):
        return items
    parsed = []
    for n, item in enumerate(items, 1):
        try:
            number = json.loads(item)
        except ValueError:  # JSONDecodeError, or a number of too many digits
            number = None
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            number = None
        if number is None or (node.item_kind == "integer" and not isinstance(number, int)):
            what = "a whole number" if node.item_kind == "integer" else "a number"
            raise forms.ValidationError({node.name: f"{node.path}: line {n} is not {what}."})
        parsed.append(number)
    return parsed


# -- reading the schema ----------------------------------------------------------------------


def _resolve(schema: Any, root: dict, depth: int = 0) -> tuple[dict, bool]:
    """``schema`` with local ``$ref``, a single ``allOf`` and a nullable ``anyOf``/
    ``oneOf``/type list read through: ``(schema, nullable)``. What cannot be read is
    ``{}`` (a JSON box)."""
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return {}, False
    rest = {k: v for k, v in schema.items() if k not in ("$ref", "allOf", "anyOf", "oneOf")}
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _pointer(root, ref)
        if target is None:
            return {}, False
        resolved, nullable = _resolve(target, root, depth + 1)
        return {**resolved, **rest}, nullable
    for combinator in ("anyOf", "oneOf"):
        branches = schema.get(combinator)
        if not isinstance(branches, list):
            continue
        others = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
        if len(others) != 1:
            return rest, False
        resolved, _ = _resolve(others[0], root, depth + 1)
        return {**resolved, **rest}, len(others) < len(branches)
    all_of = schema.get("allOf")
    if isinstance(all_of, list):
        if len(all_of) != 1:
            return rest, False
        resolved, nullable = _resolve(all_of[0], root, depth + 1)
        return {**resolved, **rest}, nullable
    kind = schema.get("type")
    if isinstance(kind, list):
        types = [t for t in kind if t != "null"]
        if len(types) == 1:
            return {**schema, "type": types[0]}, len(types) < len(kind)
        return {k: v for k, v in schema.items() if k != "type"}, False
    return schema, False


def _pointer(root: dict, ref: str) -> Any:
    if not ref.startswith("#/"):
        return None
    target: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, dict) or part not in target:
            return None
        target = target[part]
    return target


def _kind(schema: dict) -> str:
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "choice"
    if "const" in schema:
        return "choice"
    kind = schema.get("type")
    if kind is None and isinstance(schema.get("properties"), dict):
        kind = "object"
    if kind == "object":
        properties = schema.get("properties")
        return "object" if isinstance(properties, dict) and properties else "json"
    if kind == "string":
        return {"email": "email", "date": "date"}.get(schema.get("format"), "string")
    if kind in ("integer", "number", "boolean"):
        return kind
    if kind == "array":
        return _array_kind(schema)
    return "json"


def _array_kind(schema: dict) -> str:
    items = schema.get("items")
    if not isinstance(items, dict) or "$ref" in items or "anyOf" in items:
        return "json"
    options = items.get("enum")
    if isinstance(options, list) and options and all(isinstance(o, str) for o in options):
        return "choices"
    if items.get("type") in ("string", "integer", "number") and "enum" not in items:
        return "lines"
    return "json"


def _items(schema: dict, root: dict) -> dict:
    return _resolve(schema.get("items"), root)[0]


def _options(schema: dict) -> list:
    return list(schema["enum"]) if isinstance(schema.get("enum"), list) else [schema.get("const")]


def _token(value: Any) -> str:
    """The form's value for a choice: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def _choice_label(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _limits(schema: dict) -> dict:
    limits = {}
    for key, name in (("minimum", "min_value"), ("maximum", "max_value")):
        value = schema.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            limits[name] = value
    return limits


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def _initial_text(node: Node, value: Any) -> Any:
    """What the field of ``node`` starts with for ``value`` (``MISSING``: nothing); a
    value that does not fit the part starts it empty."""
    if value is MISSING or value is None:
        return "" if node.kind != "choices" else []
    kind = node.kind
    if kind == "boolean":
        return ("true" if value else "false") if isinstance(value, bool) else ""
    if kind == "choice":
        return _token(value) if _token(value) in node.values else ""
    if kind == "choices":
        return (
            [_token(v) for v in value if _token(v) in node.values]
            if isinstance(value, list)
            else []
        )
    if kind in ("integer", "number"):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return str(value) if ok else ""
    if kind == "lines":
        return "\n".join(str(v) for v in value) if isinstance(value, list) else ""
    if kind == "date":
        return value if isinstance(value, str) else ""
    if kind == "json":
        return json.dumps(value, indent=2, ensure_ascii=False)
    return value if isinstance(value, str) else ""
