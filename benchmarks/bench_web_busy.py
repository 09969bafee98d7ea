"""The console's speed while the web process executes runs itself.

    .venv/bin/python benchmarks/bench_web_busy.py [--samples 30]

Starts the PostgreSQL + Redis stack of ``bench_api.py`` twice, with the default
``DURABLE_WEB_RUN_SLOTS`` and with ``0``, and on each measures the p50 of the console's
thread list (``GET /``, logged in) idle, then while as many clients as the web process has
slots wait on runs of ``bench_api_spin``, whose middle node holds the CPU for 0.2 s (so the
slots stay full; with ``0`` those runs execute in the workers). Printed: each p50 and the
ratio busy / idle.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import time
from pathlib import Path

import httpx
from langgraph_sdk import get_client

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_api import DEFAULT_BROKER, SPIN, STARTED, manage, start_ours_pg, write_graphs  # noqa: E402
from bench_saver import DEFAULT_URL  # noqa: E402

USER, PASSWORD = "bench-console", "bench-console-password"


def console(server) -> httpx.Client:
    """A logged-in console session (a superuser of the default tenant, made if needed)."""
    manage(
        server.env,
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model; from durable.models import "
        "Membership, Role, Tenant; U = get_user_model(); "
        f"u = U.objects.filter(username='{USER}').first() or "
        f"U.objects.create_superuser('{USER}', password='{PASSWORD}'); "
        "Membership.objects.get_or_create(user=u, tenant=Tenant.default(), "
        "defaults={'role': Role.ADMIN})",
    )
    base = server.url.removesuffix("/api")
    client = httpx.Client(base_url=base, timeout=60)
    # With DEBUG off the CSRF and session cookies are Secure, which a client keeps but
    # sends only over HTTPS; this plain-HTTP stack gets them back in a Cookie header, as
    # the tests' browsers do with the token they take from the cookie.
    form = client.get("/accounts/login/")
    csrf = form.cookies["csrftoken"]
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
    answer = client.post(
        "/accounts/login/",
        data={"username": USER, "password": PASSWORD, "csrfmiddlewaretoken": token},
        headers={"Referer": f"{base}/accounts/login/", "Cookie": f"csrftoken={csrf}"},
    )
    assert answer.status_code == 302, re.sub(r"(?s)<style>.*</style>", "", answer.text)[:1500]
    session = answer.cookies["sessionid"]
    client.cookies.clear()
    client.headers["Cookie"] = (
        f"csrftoken={answer.cookies.get('csrftoken', csrf)}; sessionid={session}"
    )
    return client


def page_p50(client: httpx.Client, samples: int) -> float:
    times = []
    for _ in range(samples):
        began = time.perf_counter()
        assert client.get("/").status_code == 200
        times.append(1000 * (time.perf_counter() - began))
    return statistics.median(times)


async def keep_busy(server, clients: int, stop: asyncio.Event) -> int:
    sdk = get_client(url=server.url, api_key=server.api_key, timeout=120)
    done = 0

    async def one():
        nonlocal done
        while not stop.is_set():
            thread = (await sdk.threads.create())["thread_id"]
            await sdk.runs.wait(thread, SPIN, input={"n": 0})
            done += 1

    await asyncio.gather(*(one() for _ in range(clients)))
    await sdk.aclose()
    return done


async def busy_p50(server, client, samples: int, clients: int) -> tuple[float, int]:
    stop = asyncio.Event()
    busy = asyncio.create_task(keep_busy(server, clients, stop))
    await asyncio.sleep(1.0)  # the slots fill
    p50 = await asyncio.to_thread(page_p50, client, samples)
    stop.set()
    return p50, await busy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--clients", type=int, default=2, help="busy clients (the default slots)")
    parser.add_argument("--url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL))
    # The two stacks run one after the other, each flushing it first: one Redis db serves.
    parser.add_argument("--broker", default=DEFAULT_BROKER)
    args = parser.parse_args()
    write_graphs()
    rows = []
    try:
        for slots in ("", "0"):
            name = "ours-pg" + ("-slots0" if slots else "")
            url = args.url + ("_slots0" if slots else "")
            server = start_ours_pg(url, args.broker, name, slots)
            client = console(server)
            page_p50(client, 5)  # warm up
            idle = page_p50(client, args.samples)
            busy, runs = asyncio.run(busy_p50(server, client, args.samples, args.clients))
            rows.append((name, idle, busy, runs))
            server.stop()
    finally:
        for server in STARTED:
            server.stop()
    print("| stack | console p50 idle (ms) | busy (ms) | busy / idle | spin runs meanwhile |")
    print("| --- | --- | --- | --- | --- |")
    for name, idle, busy, runs in rows:
        print(f"| {name} | {idle:.1f} | {busy:.1f} | {busy / idle:.2f} | {runs} |")


if __name__ == "__main__":
    main()
