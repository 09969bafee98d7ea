"""The JSON view of state kept on Runs must fit every database's JSON column."""

import datetime
import json

from durable.values import jsonable


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
