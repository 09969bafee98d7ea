"""Input no page can serve is a 400 or a 404 that says why, never a 500.

Found by hand: on PostgreSQL a NUL character (``%00``) in a metadata filter, a store
filter, the inbox's graph or a checkpoint id in the path reached the database, which
refuses NUL in text; a lone UTF-16 surrogate (``\\ud800`` in JSON), which no database
can be sent, in a filter or a run's input; a page number or keyset cursor past the
database's integers, or written with digits ``int()`` does not take (``²``), raised in
Python.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from durable import engine
from durable.graphs import get_graph
from durable.models import Thread
from tests.helpers.threads import EXPENSE, counts, everything

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def thread() -> Thread:
    thread = engine.create_thread("expense_approval")
    get_graph("expense_approval").invoke(EXPENSE, engine.config_for(thread))
    return thread


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("/?meta=team%3D%00", 400, "NUL"),
        ("/?meta=%00%3D1", 400, "NUL"),
        ('/?meta=team%3D"%5Cu0000"', 400, "NUL"),
        ("/?after=%C2%B2-1", 400, "damaged"),
        ("/?before=1-%C2%B2", 400, "damaged"),
        ("/store/?filter=a%3D%00", 400, "NUL"),
        ("/store/?filter=%00%3D1", 400, "NUL"),
        ('/store/?filter={"a": "%5Cu0000"}', 400, "NUL"),
        ('/?meta=team%3D"%5Cud800"', 400, "lone UTF-16 surrogate"),
        ('/store/?filter={"a": "%5Cudfff"}', 400, "filter.a: holds a lone UTF-16 surrogate"),
        ('/store/?filter={"%5Cud800": 1}', 400, "the key"),
        ("/inbox/?graph=%00", 400, "no graph"),
        ("/inbox/?graph=" + "g" * 101, 400, "no graph"),
    ],
)
def test_bad_query_parameters_are_input_errors(client, path, status, says):
    response = client.get(path)
    assert response.status_code == status
    assert says in response.content.decode()


@pytest.mark.parametrize("page", ["99999999999999999999999", "%C2%B2", "9" * 5000])
def test_a_store_page_past_any_offset_is_an_empty_page(client, page):
    response = client.get(f"/store/?page={page}")
    assert response.status_code == 200
    assert "No item in the store" in response.content.decode()


@pytest.mark.parametrize("suffix", ["", "fork/", "replay/", "json/"])
@pytest.mark.parametrize("checkpoint_id", ["%00", "a%00b", "c" * 65])
def test_a_checkpoint_id_the_tables_cannot_hold_is_a_404(client, thread, checkpoint_id, suffix):
    response = client.get(f"/threads/{thread.pk}/checkpoints/{checkpoint_id}/{suffix}")
    assert response.status_code == 404


def test_a_real_checkpoint_id_still_resolves(client, thread):
    checkpoint_id = engine.thread_state(thread).config["configurable"]["checkpoint_id"]
    url = reverse("checkpoint", args=[thread.pk, checkpoint_id])
    assert url == f"/threads/{thread.pk}/checkpoints/{checkpoint_id}/"
    assert client.get(url).status_code == 200


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"employee": "\\ud800"}', "input.employee: holds a lone UTF-16 surrogate (\\ud800)"),
        ('{"employee": "A\\u0000B"}', "input.employee: holds a NUL character"),
        ('{"\\udfff": 1}', "input: the key &#x27;\\udfff&#x27; holds a lone UTF-16 surrogate"),
    ],
)
def test_a_start_input_holding_text_no_database_takes_is_refused_on_its_box(client, text, says):
    response = client.post(reverse("start-run"), {"graph": "expense_approval", "input": text})
    assert response.status_code == 400
    assert says in response.content.decode()
    (form,) = [f for f in response.context["start_forms"] if f["graph"] == "expense_approval"]
    assert list(form["form"].errors) == ["input"]
    assert counts() == (0, 0, 0)


def test_a_fork_value_holding_text_no_database_takes_is_refused_on_its_box(client, thread):
    checkpoint_id = engine.thread_state(thread).config["configurable"]["checkpoint_id"]
    before = everything()
    response = client.post(
        reverse("fork", args=[thread.pk, checkpoint_id]),
        {"as_node": "validate", "reason": "typo", "state-employee": '"Grace \\ud800"'},
    )
    assert response.status_code == 400
    assert "values.employee: holds a lone UTF-16 surrogate" in response.content.decode()
    assert list(response.context["form"].errors) == ["state-employee"]
    assert everything() == before


# A number of more digits than Python converts (``sys.get_int_max_str_digits()``, 4300):
# valid JSON that ``json.loads`` refuses with a plain ``ValueError``, not a
# ``JSONDecodeError``. Found by hand: a 500 from the fork form's preview.
HUGE = "1" * 5000


def test_a_fork_value_of_too_many_digits_is_refused_on_its_box(client, thread):
    checkpoint_id = engine.thread_state(thread).config["configurable"]["checkpoint_id"]
    before = everything()
    data = {"as_node": "validate", "reason": "typo", "state-amount": HUGE}
    response = client.post(reverse("fork", args=[thread.pk, checkpoint_id]), data)
    assert response.status_code == 400
    assert "amount: the value is not valid JSON: Exceeds the limit" in response.content.decode()
    assert list(response.context["form"].errors) == ["state-amount"]
    preview = client.post(reverse("fork-preview", args=[thread.pk, checkpoint_id]), data)
    assert preview.status_code == 200
    assert "amount: the value is not valid JSON: Exceeds the limit" in preview.content.decode()
    assert everything() == before


def test_a_start_input_of_too_many_digits_is_refused_on_its_box(client):
    text = '{"employee": "Ada", "amount": ' + HUGE + ', "description": "d"}'
    response = client.post(reverse("start-run"), {"graph": "expense_approval", "input": text})
    assert response.status_code == 400
    assert "not valid JSON: Exceeds the limit" in response.content.decode()
    assert counts() == (0, 0, 0)


def test_a_store_filter_of_too_many_digits_is_an_input_error(client):
    response = client.get("/store/", {"filter": '{"a": ' + HUGE + "}"})
    assert response.status_code == 400
    assert "filter: not valid JSON: Exceeds the limit" in response.content.decode()
