"""Live progress: a run's events as server-sent events from the console served by
uvicorn (``web``), while a real worker runs the graph."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from django.conf import settings
from django.db import connection

from durable import conf, engine
from durable.engine import follow as events
from durable.engine import records
from durable.models import Run, RunEvent
from tests.helpers.graphs import release, runs_of
from tests.helpers.processes import WEB_APPLICATION_NAME, WEB_POOL_SIZE, pg_connections
from tests.helpers.runs import finished
from tests.helpers.threads import EXPENSE
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def parse_sse(lines: Iterable[str]) -> Iterator[dict]:
    """Each event of an SSE stream as soon as its blank line arrives:
    ``{"id", "event", "data"}`` (the fields it has)."""
    current = {}
    for line in lines:
        if not line:
            if current:
                yield current
            current = {}
        elif not line.startswith(":"):
            key, _, value = line.partition(": ")
            current[key] = json.loads(value) if key == "data" else value


def read_sse(response: httpx.Response) -> list[dict]:
    return list(parse_sse(response.iter_lines()))


def events_of(web, run: Run, cookies: dict, **headers) -> list[dict]:
    url = f"{web.url}/runs/{run.pk}/events/"
    with httpx.stream("GET", url, headers=headers, cookies=cookies, timeout=60) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        return read_sse(response)


def test_a_runs_events_stream_with_their_seq_and_end_with_its_status(web, worker, cookies):
    run = finished(engine.start("expense_approval", EXPENSE))
    sent = events_of(web, run, cookies)

    recorded = list(RunEvent.objects.filter(run=run).order_by("seq"))
    assert [e["id"] for e in sent[:-1]] == [str(e.seq) for e in recorded]
    assert [e["event"] for e in sent[:-1]] == [e.event for e in recorded]
    assert sent[0]["data"]["data"]["status"] == "pending"
    updates = [e["data"]["data"] for e in sent if e["event"] == "updates"]
    assert updates[0] == {"validate": {"problems": [], "status": "validated"}}
    assert sent[-1] == {"event": "end", "data": {"status": "interrupted"}}


def test_a_reconnecting_client_gets_only_what_it_missed(web, worker, cookies):
    run = finished(engine.start("expense_approval", EXPENSE))
    everything = events_of(web, run, cookies)
    resumed = events_of(web, run, cookies, **{"Last-Event-ID": everything[2]["id"]})
    assert resumed == everything[3:]
    last = events_of(web, run, cookies, **{"Last-Event-ID": everything[-2]["id"]})
    assert last == everything[-1:]


def test_refused_stream_requests(web, cookies):
    assert httpx.get(f"{web.url}/runs/999999/events/", cookies=cookies).status_code == 404
    bad = httpx.get(f"{web.url}/runs/1/events/", headers={"Last-Event-ID": "x"}, cookies=cookies)
    assert bad.status_code == 400
    assert "Last-Event-ID must be an event id" in bad.text


def start_probe(directory: Path) -> Run:
    """A probe run (tests/helpers/graphs.py) held by its ``slow`` node until ``release``."""
    run = engine.start("probe", {"dir": str(directory), "log": []})
    wait_for(lambda: runs_of(directory, "slow") == 1, message="the probe's slow node")
    return run


def test_events_arrive_while_the_run_is_still_running(web, worker, tmp_path, cookies):
    run = start_probe(tmp_path)
    url = f"{web.url}/runs/{run.pk}/events/"
    with httpx.stream("GET", url, timeout=60, cookies=cookies) as response:
        stream = parse_sse(response.iter_lines())
        custom = next(e for e in stream if e["event"] == "custom")
        # fast's progress arrived while slow still holds the run open.
        assert custom["data"]["data"] == {"node": "fast", "progress": 1.0}
        assert Run.objects.get(pk=run.pk).status == Run.Status.RUNNING
        release(tmp_path)
        rest = list(stream)
    assert rest[-1] == {"event": "end", "data": {"status": "success"}}
    assert {"after": {"log": ["after"]}} in [e["data"]["data"] for e in rest[:-1]]


STREAMS = 50


def web_connections(web) -> int:
    """Database connections the web process holds now: its backends on PostgreSQL, its
    open handles on the database file on SQLite."""
    if connection.vendor == "postgresql":
        return pg_connections(WEB_APPLICATION_NAME)
    database = os.path.realpath(settings.DATABASES["default"]["NAME"])
    fds = Path(f"/proc/{web.proc.pid}/fd")
    return sum(1 for fd in fds.iterdir() if _target(fd) == database)


def _target(fd: Path) -> str | None:
    try:
        return os.readlink(fd)
    except OSError:  # closed while we looked
        return None


def test_fifty_open_streams_hold_a_bounded_number_of_connections(web, worker, tmp_path, cookies):
    run = start_probe(tmp_path)
    url = f"{web.url}/runs/{run.pk}/events/"
    seen = []

    async def follow(client: httpx.AsyncClient, opened: asyncio.Event, got: list):
        async with client.stream("GET", url) as response:
            lines = response.aiter_lines()
            async for line in lines:
                if line.startswith("event: "):
                    got.append(line.removeprefix("event: "))
                    if line == "event: custom":
                        opened.set()
                    if line == "event: end":
                        return

    async def main() -> list[list[str]]:
        limits = httpx.Limits(max_connections=STREAMS)
        async with httpx.AsyncClient(timeout=120, limits=limits, cookies=cookies) as client:
            opened = [asyncio.Event() for _ in range(STREAMS)]
            got = [[] for _ in range(STREAMS)]
            tasks = [asyncio.create_task(follow(client, opened[i], got[i])) for i in range(STREAMS)]
            await asyncio.wait_for(asyncio.gather(*(o.wait() for o in opened)), 120)
            # Every stream is open and has had its first events; they go on polling.
            for _ in range(40):
                seen.append(await asyncio.to_thread(_counted, web))
                await asyncio.sleep(0.05)
            release(tmp_path)
            await asyncio.wait_for(asyncio.gather(*tasks), 120)
            return got

    got = asyncio.run(main())

    assert all(g[-1] == "end" and "custom" in g and "updates" in g for g in got)
    print(f"web connections while {STREAMS} streams were open: {sorted(set(seen))}")
    if connection.vendor == "postgresql":
        # The pool's connections, and the one the events listener holds.
        assert max(seen) <= WEB_POOL_SIZE + 1, seen
        assert listeners(web) == 1
    else:
        assert max(seen) <= conf.DURABLE_EVENT_READERS, seen


def _counted(web) -> int:
    try:
        return web_connections(web)
    finally:
        connection.close()


def listeners(web) -> int:
    return pg_connections(WEB_APPLICATION_NAME, "query LIKE 'LISTEN %%'")


@pytest.mark.skipif(connection.vendor != "postgresql", reason="LISTEN/NOTIFY is PostgreSQL's")
def test_on_postgresql_new_events_wake_the_streams(worker, tmp_path, monkeypatch):
    """With polling put off for ten minutes, a stream still gets each event as the
    worker writes it: NOTIFY wakes it."""
    monkeypatch.setattr(settings, "DURABLE_EVENTS_FALLBACK_SECONDS", 600, raising=False)
    monkeypatch.setattr(settings, "DURABLE_EVENTS_POLL_SECONDS", 600, raising=False)
    run = start_probe(tmp_path)

    async def follow() -> tuple[list[str], str | None]:
        seen = []
        async for item in events.follow(run.pk):
            if isinstance(item, events.End):
                return seen, item.status
            if isinstance(item, events.Event):
                seen.append(item.event)
                if item.event == "custom":  # written before slow held the run
                    release(tmp_path)
        raise AssertionError("the stream ended without End")

    try:
        seen, status = asyncio.run(asyncio.wait_for(follow(), 120))
    finally:
        events.stop_listening()
    assert status == "success"
    assert seen.count("updates") == 3  # fast, slow, then after: all after the release


def notify(payload: str) -> None:
    with psycopg.connect(**events._connection_params(), autocommit=True) as conn:
        conn.execute("SELECT pg_notify(%s, %s)", [records.CHANNEL, payload])


@pytest.mark.skipif(connection.vendor != "postgresql", reason="LISTEN/NOTIFY is PostgreSQL's")
def test_on_postgresql_a_wait_sleeps_through_a_runs_chunks_and_wakes_at_its_end(
    worker, tmp_path, monkeypatch
):
    """A wait reads the run's status only when it may have changed: a notification of
    stream chunks only wakes the run's streams, not its waits. The run's end (a
    lifecycle event) wakes both: with polling put off for ten minutes, the wait ends
    when the run does."""
    monkeypatch.setattr(settings, "DURABLE_EVENTS_FALLBACK_SECONDS", 600, raising=False)
    monkeypatch.setattr(settings, "DURABLE_EVENTS_POLL_SECONDS", 600, raising=False)
    run = start_probe(tmp_path)

    async def woken(pause) -> bool:
        try:
            await asyncio.wait_for(pause.woken.wait(), 2)
        except TimeoutError:
            return False
        return True

    async def scenario():
        async with (
            events._watching(run.pk) as stream,
            events._watching(run.pk, ends_only=True) as wait,
        ):
            await asyncio.to_thread(wait_for, events._listener().listening.is_set)
            await asyncio.sleep(0.5)  # past the listener's wake of everyone once connected
            stream.clear(), wait.clear()
            await asyncio.to_thread(notify, f"{run.pk}{records.CHUNKS_ONLY}")
            chunks = (await woken(stream), await woken(wait))
            stream.clear(), wait.clear()
            await asyncio.to_thread(notify, str(run.pk))
            lifecycle = (await woken(stream), await woken(wait))
        release(tmp_path)
        return chunks, lifecycle, await events.wait_until_final(run.pk)

    try:
        chunks, lifecycle, status = asyncio.run(asyncio.wait_for(scenario(), 120))
    finally:
        events.stop_listening()
    assert chunks == (True, False)
    assert lifecycle == (True, True)
    assert status == "success"
