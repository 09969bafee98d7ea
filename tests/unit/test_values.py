"""The JSON view of state kept on Runs must fit every database's JSON column."""

import datetime
import json

from durable.values import json_text, jsonable


def test_jsonable_makes_any_state_storable_as_json():
    value = {
        "nan": float("nan"),
        "inf": float("-inf"),
        "nul": "a\x00b",
        "when": datetime.date(2026, 11, 30),
        "tags": {"x"},
        "obj": object(),
    }
    view = jsonable(value)
    assert view["nan"] == "NaN" and view["inf"] == "-Infinity"
    assert view["nul"] == "a\ufffdb"
    assert view["when"] == "2026-11-30"
    assert view["tags"] == ["x"]
    assert view["obj"].startswith("<object object")
    # Strict JSON (no NaN) with no NUL escapes: what SQLite's JSON_VALID and jsonb accept.
    text = json.dumps(view, allow_nan=False)
    assert "\\u0000" not in text


def test_json_text_is_the_text_of_jsonable():
    for value in (
        {"n": 1, "nul": "a\x00b", "tags": ("x", "y"), "when": datetime.date(2026, 11, 30)},
        {"nan": float("nan"), "nested": [{"inf": float("inf")}]},
        [None, True, 1.5, "é"],
    ):
        text = json_text(value)
        assert json.loads(text) == jsonable(value)
        assert "\\u0000" not in text and "NaN" not in text.replace('"NaN"', "")
