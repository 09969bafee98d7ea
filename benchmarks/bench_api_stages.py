"""Where a run's client-visible time goes on our PostgreSQL stack, stage by stage.

    .venv/bin/python benchmarks/bench_api_stages.py [--samples 100] [--stream]

Starts ``ours-pg`` as ``bench_api.py`` does (uvicorn, two ``celery worker
--concurrency=1``, PostgreSQL ``durable_bench``, Redis db 8), makes ``--samples``
``runs.wait`` (``--stream``: ``runs.stream`` to its first ``updates`` event) of the
three-node graph through the official SDK, one after the other, each on a thread made
beforehand, then splits each from the rows the run left (one clock: everything runs on
this machine): the request sent, the Run row made (``created_at``), claimed by a worker
(``started_at``), its first ``updates`` chunk (that event's ``created_at``, stamped when
LangGraph yielded it), the run ended (``ended_at``), and the client's answer (the wait
returned, or the first event received). Prints the median of each stage in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import statistics
import sys
from pathlib import Path

import psycopg
from langgraph_sdk import get_client

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_api import DEFAULT_BROKER, GRAPH, start_ours_pg, wait_ms, write_graphs  # noqa: E402
from bench_saver import DEFAULT_URL  # noqa: E402

URL = DEFAULT_URL.rsplit("/", 1)[0] + "/durable_bench"

STAGES = """
SELECT r.created_at, r.started_at,
       (SELECT min(e.created_at) FROM durable_runevent e
         WHERE e.run_id = r.id AND e.event = 'updates'),
       r.ended_at
FROM durable_run r JOIN durable_thread t ON t.id = r.thread_id
WHERE t.name = %s
"""


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


async def sample(client, stream: bool) -> tuple[str, dt.datetime, dt.datetime]:
    """One run: its thread's name, when it was asked for, when the client had its answer."""
    thread = (await client.threads.create())["thread_id"]
    sent = now()
    if not stream:
        await client.runs.wait(thread, GRAPH, input={"n": 0})
        return thread, sent, now()
    answered = None
    async for part in client.runs.stream(thread, GRAPH, input={"n": 0}, stream_mode="updates"):
        if part.event == "updates" and answered is None:
            answered = now()
    return thread, sent, answered


async def measure(samples: int, stream: bool) -> list[tuple[str, float]]:
    write_graphs()
    server = start_ours_pg(URL, DEFAULT_BROKER)
    try:
        client = get_client(url=server.url, api_key=server.api_key, timeout=60)
        for _ in range(5):  # warm up
            await wait_ms(client)
        runs = [await sample(client, stream) for _ in range(samples)]
        await client.aclose()
    finally:
        server.stop()
    spans: dict[str, list[float]] = {}
    with psycopg.connect(URL) as conn:
        for thread, sent, answered in runs:
            created, started, first, ended = conn.execute(STAGES, [thread]).fetchone()
            times = [sent, created, started, first, ended]
            names = ["request -> run row", "row -> claimed", "claimed -> first updates"]
            names.append("first updates -> ended")
            if stream:
                names[-1] = "first updates -> client"
                times[-1] = answered
            else:
                names.append("ended -> client")
                times.append(answered)
            names.append("total")
            pairs = [*zip(times, times[1:], strict=False), (sent, answered)]
            for name, (a, b) in zip(names, pairs, strict=True):
                spans.setdefault(name, []).append((b - a).total_seconds() * 1000)
    return [(name, statistics.median(values)) for name, values in spans.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--stream", action="store_true", help="runs.stream to its first event")
    args = parser.parse_args()
    for name, ms in asyncio.run(measure(args.samples, args.stream)):
        print(f"{name:28s} {ms:7.1f} ms")


if __name__ == "__main__":
    main()
