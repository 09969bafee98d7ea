"""The API's crons through the official JS SDK (``@langchain/langgraph-sdk``):
``crons.createForThread``, ``create``, ``count``, ``search``, ``update`` and ``delete``,
as ``tests/js/crons.mjs`` calls them against the live server (``js_results``)."""

from __future__ import annotations

import pytest

from durable.models import Cron
from tests.helpers.js_sdk import result

pytestmark = pytest.mark.django_db(transaction=True)

JS_SCRIPT = "crons.mjs"


def test_crons_create_search_count_update_delete(js_results):
    r = result(js_results, "crons")
    on_thread, alone = r["on_thread"], r["alone"]
    assert on_thread["thread_id"] == r["thread_id"]
    assert on_thread["timezone"] == "America/New_York" and on_thread["next_run_date"]
    assert alone["thread_id"] is None and alone["on_run_completed"] == "keep"
    assert alone["metadata"] == {"team": "growth"}
    assert (r["counted"], r["on_the_thread"]) == (2, 1)
    assert r["found_ids"] == [alone["cron_id"]]
    assert r["selected"] == [
        {"cron_id": on_thread["cron_id"], "enabled": True},
        {"cron_id": alone["cron_id"], "enabled": True},
    ]
    assert r["updated"]["schedule"] == "0 * * * *" and r["updated"]["enabled"] is False
    assert r["disabled_ids"] == [alone["cron_id"]]
    assert (r["bad_zone"]["status"], r["bad_zone"]["field"]) == (422, "timezone")
    assert (r["past_end"]["status"], r["past_end"]["field"]) == (422, "end_time")
    assert r["after_delete"] == 1
    assert list(Cron.objects.values_list("schedule", flat=True)) == ["0 9 * * 1-5"]
