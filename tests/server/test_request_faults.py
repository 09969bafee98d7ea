"""The web process's database connection terminated under a request (as a failover or an
administrator's ``pg_terminate_backend`` does): a read is tried again on a new connection
and answers as if nothing happened; a write answers 503 with ``Retry-After`` and a JSON
body naming the fault (the console: its own page), and whatever it had not committed is
gone; never a 500, never a traceback.

The terminations are real and land between the request's queries, at each of them in
turn (``tests/helpers/terminations.py``), in a web process of this module's own; then
every backend of that process is terminated, five times, under a load of requests."""

from __future__ import annotations

import threading
import time
from collections import Counter

import httpx
import pytest
from django.conf import settings
from django.db import connection
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import APIStatusError

from durable.models import Run, Thread
from tests.helpers.processes import WebProcess, pg_connections
from tests.helpers.terminations import HEADER
from tests.helpers.threads import EXPENSE

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
        reason="terminates PostgreSQL backends; SQLite has no server connections to lose",
    ),
]

APPLICATION_NAME = "durable-test-web-faults"


@pytest.fixture(scope="module")
def faulty_web(django_db_setup, django_db_blocker):
    """uvicorn on the test database, its backends named ``APPLICATION_NAME``, that
    terminates its own backend at the query a request's ``X-Terminate-At-Query`` says."""
    env = {"DURABLE_TEST_TERMINATIONS": "1", "PGAPPNAME": APPLICATION_NAME}
    process = WebProcess(settings.VAR_DIR / "test-web-faults.log", **env).start()
    yield process
    process.stop()


def _thread(api) -> str:
    return api.post("/threads", json={"metadata": {"team": "faults"}}).json()["thread_id"]


def _each_query(send) -> list[httpx.Response]:
    """``send(headers)`` once undisturbed, to count its queries, then once for each of
    them with the backend terminated just before it. Returns the answers, undisturbed
    first."""
    clean = send({})
    count = int(clean.headers["X-Queries"])
    assert count > 0 and clean.headers["X-Terminated"] == "0"
    answers = [clean]
    for at in range(1, count + 1):
        answer = send({HEADER: str(at)})
        assert answer.headers["X-Terminated"] == "1", at
        answers.append(answer)
    return answers


def _read_again(answers: list[httpx.Response], shape=lambda a: a.json()) -> None:
    clean, *faulted = answers
    assert clean.status_code == 200
    for at, answer in enumerate(faulted, 1):
        assert (at, answer.status_code) == (at, 200), answer.text
        assert shape(answer) == shape(clean)


@pytest.fixture
def api(faulty_web, api_key):
    with httpx.Client(base_url=f"{faulty_web.url}/api", headers={"x-api-key": api_key}) as c:
        yield c


def test_a_thread_read_is_tried_again_after_each_of_its_queries(api):
    thread_id = _thread(api)
    _read_again(_each_query(lambda h: api.get(f"/threads/{thread_id}", headers=h)))


def test_a_search_is_tried_again_after_each_of_its_queries(api):
    _thread(api), _thread(api)
    body = {"metadata": {"team": "faults"}, "limit": 10}
    answers = _each_query(lambda h: api.post("/threads/search", json=body, headers=h))
    _read_again(answers, lambda a: sorted(t["thread_id"] for t in a.json()))
    assert len(answers[0].json()) == 2


def test_a_run_create_answers_503_and_keeps_nothing_it_did_not_commit(api):
    threads = [_thread(api) for _ in range(40)]
    body = {"assistant_id": "expense_approval", "input": EXPENSE}

    def create(headers):
        return api.post(f"/threads/{threads.pop()}/runs", json=body, headers=headers)

    clean, *faulted = _each_query(create)
    assert clean.status_code == 200
    for answer in faulted:
        thread_id = str(answer.request.url).split("/threads/")[1].split("/")[0]
        runs = Run.objects.filter(thread__name=thread_id)
        if answer.status_code == 200:  # the termination met a query the engine retries
            assert runs.count() == 1
            continue
        assert answer.status_code == 503, answer.text
        assert answer.headers["Retry-After"] == "1"
        assert answer.json()["detail"].startswith("The database is unavailable (")
        assert answer.json()["field"] is None
        assert "Traceback" not in answer.text
        # Either the run was committed before the termination, whole, or nothing is.
        assert runs.count() <= 1
        if not runs.exists():
            assert Thread.objects.get(name=thread_id).status == Thread.Status.IDLE
    assert {a.status_code for a in faulted} <= {200, 503}


def test_a_console_page_is_tried_again_after_each_of_its_queries(faulty_web, cookies, api):
    thread_id = _thread(api)
    pk = Thread.objects.get(name=thread_id).pk
    with httpx.Client(base_url=faulty_web.url, cookies=cookies) as browser:
        answers = _each_query(lambda h: browser.get(f"/threads/{pk}/", headers=h))
        _read_again(answers, lambda a: thread_id in a.text and "<h1" in a.text)
        listing = _each_query(lambda h: browser.get("/", headers=h))
        _read_again(listing, lambda a: thread_id in a.text)


def test_a_console_form_answers_the_consoles_503(faulty_web, cookies):
    with httpx.Client(base_url=faulty_web.url, cookies=cookies) as browser:
        assert browser.get("/").status_code == 200  # sets the CSRF cookie
        form = {"csrfmiddlewaretoken": browser.cookies["csrftoken"], "graph": "expense_approval"}
        headers = {"referer": f"{faulty_web.url}/", HEADER: "1"}
        before = Run.objects.count()
        answer = browser.post("/runs/start/", data=form, headers=headers)

    assert answer.status_code == 503
    assert answer.headers["Retry-After"] == "1"
    assert "<h1>Database unavailable</h1>" in answer.text
    assert 'class="brand"' in answer.text  # the console's layout
    assert "SQLSTATE 57P01: terminating connection due to administrator command" in answer.text
    assert "Traceback" not in answer.text
    assert Run.objects.count() == before  # terminated before its first query: nothing


def test_the_python_sdk_reads_through_a_termination_and_is_told_503_for_a_write(
    faulty_web, api_key, api
):
    thread_id = _thread(api)
    terminated = get_sync_client(
        url=f"{faulty_web.url}/api", api_key=api_key, headers={HEADER: "1"}
    )
    assert terminated.threads.get(thread_id)["thread_id"] == thread_id
    assert [t["thread_id"] for t in terminated.threads.search(metadata={"team": "faults"})] == [
        thread_id
    ]
    # langgraph-sdk does not send a write again itself: it raises the 503, with its
    # Retry-After, for the caller to decide; sent again, the write is done.
    with pytest.raises(APIStatusError) as refused:
        terminated.runs.create(thread_id, "expense_approval", input=EXPENSE)
    assert refused.value.response.status_code == 503
    assert refused.value.response.headers["Retry-After"] == "1"
    assert not Run.objects.filter(thread__name=thread_id).exists()
    client = get_sync_client(url=f"{faulty_web.url}/api", api_key=api_key)
    run = client.runs.create(thread_id, "expense_approval", input=EXPENSE)
    assert Run.objects.filter(thread__name=thread_id).count() == 1
    assert run["status"] == "pending"


def _terminate_all() -> int:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND application_name = %s",
            [APPLICATION_NAME],
        )
        return cur.fetchone()[0]


def test_no_500_when_every_backend_is_terminated_five_times_under_load(faulty_web, api, cookies):
    threads = [_thread(api) for _ in range(4)]
    statuses: Counter = Counter()
    stop = threading.Event()

    def load(kind: int):
        with httpx.Client(base_url=faulty_web.url, cookies=cookies, timeout=30) as c:
            c.headers["x-api-key"] = api.headers["x-api-key"]
            i = 0
            while not stop.is_set():
                i += 1
                thread_id = threads[i % len(threads)]
                if kind == 0:
                    r = c.get(f"/api/threads/{thread_id}")
                elif kind == 1:
                    r = c.post("/api/threads/search", json={"limit": 5})
                elif kind == 2:
                    r = c.get("/")
                else:
                    r = c.post("/api/threads", json={"metadata": {"load": i}})
                statuses[(kind, r.status_code)] += 1

    loaders = [threading.Thread(target=load, args=(k,)) for k in range(4)]
    for loader in loaders:
        loader.start()
    try:
        for _ in range(5):
            time.sleep(1.5)
            assert _terminate_all() > 0
        time.sleep(1.5)
    finally:
        stop.set()
        for loader in loaders:
            loader.join()

    print("answers under the terminations (kind, status):", dict(statuses))
    assert not [key for key in statuses if key[1] == 500], statuses
    assert {status for _, status in statuses} <= {200, 503}
    # The reads answered, the writes answered or were told to try again.
    assert all(statuses[(kind, 200)] > 0 for kind in range(4))
    assert pg_connections(APPLICATION_NAME) <= 4


def test_the_openapi_document_lists_the_503_with_retry_after(api):
    document = api.get("/openapi.json").json()
    answer = document["paths"]["/api/threads/{thread_id}"]["get"]["responses"]["503"]
    assert answer["headers"]["Retry-After"]["schema"] == {"type": "integer"}
    assert "ErrorResponse" in answer["content"]["application/json"]["schema"]["$ref"]
    assert "503" not in document["paths"]["/api/ok"]["get"]["responses"]
