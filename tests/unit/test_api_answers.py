"""The answer schemas of the OpenAPI document (``durable.api.answers``) filter what a
route returns through them (ninja validates and dumps it): they keep every key the
route's shape builds, the ones they do not declare included."""

from __future__ import annotations

from django.utils import timezone

from durable.api import answers


def test_an_answer_keeps_the_keys_its_schema_does_not_declare():
    now = timezone.now()
    item = {"namespace": ["a"], "key": "k", "value": {"v": 1}, "created_at": now}
    item |= {"updated_at": now, "score": 0.5, "added_later": {"x": [1]}}
    found = answers.SearchItemsResponse.model_validate({"items": [item], "more": 1})
    assert found.model_dump() == {"items": [item], "more": 1}


def test_a_state_with_a_subgraph_state_validates_whole():
    checkpoint = {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "1"}
    checkpoint |= {"checkpoint_map": None}
    inner = {"values": {}, "next": [], "checkpoint": checkpoint, "metadata": None}
    inner |= {"created_at": None, "parent_checkpoint": None, "tasks": [], "interrupts": []}
    task = {"id": "1", "name": "n", "error": None, "interrupts": [], "checkpoint": None}
    task |= {"state": inner, "result": None}
    state = inner | {"tasks": [task], "interrupts": [{"value": "?", "id": "i"}]}
    assert answers.ThreadState.model_validate(state).model_dump() == state
