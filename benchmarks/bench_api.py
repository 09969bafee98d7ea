"""The API's speed through the official Python SDK (``langgraph-sdk``), side by side.

    .venv/bin/python benchmarks/bench_api.py [--rounds 3] [--samples 10] [--peers]

Servers, each started by this script on a free port of 127.0.0.1 and stopped at its end:

- ``ours-pg``: uvicorn serving ``dashboard.asgi:application`` on PostgreSQL (``--url``,
  default ``durable_bench``) with Redis (``--broker``, default db 8) and two
  ``celery worker --concurrency=1`` processes (``bench_runs.start_workers``);
- ``ours-embedded``: ``make run``'s default: SQLite and kombu's SQLite broker in a fresh
  ``var/bench_api/embedded``, one ``celery worker --concurrency=2 --beat``;
- with ``--peers``: Aegra (``aegra-api`` in ``var/peers/aegra``, Python 3.12, on PostgreSQL
  ``aegra_bench``, its default executor: runs as asyncio tasks in the API process) and the
  Agent Server's in-memory edition (``langgraph-cli[inmem]`` in ``var/peers/agentserver``,
  ``langgraph dev``), each installed here on first use.

Every server loads the same graphs from ``var/bench_api/graphs`` (a module this script
writes, named by a ``langgraph.json`` for the peers and by ``DURABLE_EXTRA_GRAPHS`` for
ours): ``bench_api``, three nodes that each add one to ``n``, and ``bench_api_interrupt``,
whose middle node calls ``interrupt``.

Rows, each taken on a thread made beforehand (not timed): ``runs.wait`` (ms);
``runs.stream`` to its first ``updates`` event (ms); an interrupt round trip, the
``runs.wait`` that stops at the interrupt and the ``runs.wait`` with ``Command(resume=)``
that ends it (ms); throughput of 16 concurrent clients, each making a thread and waiting
for a run on it, over ``16 * --per-client`` runs (runs/s); ``threads.get_history(limit=10)``
of a thread with three finished runs (ms). Rounds interleave the servers row by row, each
round in a rotated order; a server's figure for a round is the median of its ``--samples``
(throughput: the round's one figure). Printed: the median over rounds, the spread
(min-max over rounds), and ratios taken round by round (median of them): each server over
Aegra, and ours-embedded over ours-pg.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
import psycopg
import redis
from langgraph_sdk import get_client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_runs import start_workers  # noqa: E402
from bench_saver import DEFAULT_URL, ensure_database  # noqa: E402

WORK = ROOT / "var" / "bench_api"
GRAPHS_DIR = WORK / "graphs"
PEERS = ROOT / "var" / "peers"
DEFAULT_BROKER = "redis://127.0.0.1:6379/8"
AEGRA_URL = "postgresql://postgres@127.0.0.1:5432/aegra_bench"
GRAPH, INTERRUPT, SPIN = "bench_api", "bench_api_interrupt", "bench_api_spin"
CLIENTS = 16
SLOTS_OFF = "-slots0"  # the suffix of a stack run with DURABLE_WEB_RUN_SLOTS=0

# The graphs every server loads: plain LangGraph, no import of this project.
GRAPH_MODULE = '''\
"""The benchmark's graphs (written by benchmarks/bench_api.py)."""

import time

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict

SPIN_SECONDS = 0.2


class Count(TypedDict):
    n: int


def step(state: Count) -> dict:
    return {"n": state["n"] + 1}


def ask(state: Count) -> dict:
    interrupt("go on?")
    return {"n": state["n"] + 1}


def _chain(middle) -> StateGraph:
    builder = StateGraph(Count)
    builder.add_node("first", step)
    builder.add_node("second", middle)
    builder.add_node("third", step)
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", "third")
    builder.add_edge("third", END)
    return builder


def build() -> StateGraph:
    return _chain(step)


def build_interrupting() -> StateGraph:
    return _chain(ask)


def spin(state: Count) -> dict:
    # Holds the CPU (and the interpreter lock) for SPIN_SECONDS, as a heavy node does.
    deadline = time.process_time() + SPIN_SECONDS
    while time.process_time() < deadline:
        pass
    return {"n": state["n"] + 1}


def build_spinning() -> StateGraph:
    return _chain(spin)


graph = build().compile()
interrupting = build_interrupting().compile()
'''


def write_graphs() -> None:
    GRAPHS_DIR.mkdir(parents=True, exist_ok=True)
    (GRAPHS_DIR / "bench_api_graphs.py").write_text(GRAPH_MODULE)
    config = {
        "dependencies": ["."],
        "graphs": {
            GRAPH: "./bench_api_graphs.py:graph",
            INTERRUPT: "./bench_api_graphs.py:interrupting",
        },
    }
    (GRAPHS_DIR / "langgraph.json").write_text(json.dumps(config, indent=2))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_up(url: str, proc: subprocess.Popen, log: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(
                f"{url} exited ({proc.returncode}); its log, {log}:\n{log.read_text()}"
            )
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{url} did not answer within {timeout:.0f} s; see {log}")


STARTED: list[Server] = []


@dataclass
class Server:
    """A server under test: its SDK URL and key, and the processes this script started."""

    name: str
    url: str = ""
    api_key: str | None = None
    procs: list[subprocess.Popen] = field(default_factory=list)
    database: str = ""  # a PostgreSQL URL whose server backends count in its CPU
    env: dict = field(default_factory=dict)  # ours: the environment it was started with

    def cpu_seconds(self) -> float:
        """User + system CPU seconds so far of its processes, their children (pool
        processes) and, on PostgreSQL, the server backends connected to its database.
        A backend that exited meanwhile is not counted, nor is Redis (shared)."""
        total = 0.0
        procs = []
        for proc in self.procs:
            try:
                top = psutil.Process(proc.pid)
                procs += [top, *top.children(recursive=True)]
            except psutil.NoSuchProcess:
                continue
        if self.database:
            base, name = self.database.rsplit("/", 1)
            with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
                rows = conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = %s", [name]
                ).fetchall()
            for (pid,) in rows:
                try:
                    procs.append(psutil.Process(pid))
                except psutil.NoSuchProcess:
                    pass
        for p in procs:
            try:
                times = p.cpu_times()
            except psutil.Error:
                continue
            total += times.user + times.system
        return total

    def __post_init__(self):
        STARTED.append(self)  # stopped at the end even when starting it fails

    def spawn(self, args: list[str], log: Path, **kwargs) -> subprocess.Popen:
        # Its own process group, so that stop() takes down what it forks (reloaders, pools).
        proc = subprocess.Popen(
            args,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
            **kwargs,
        )
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                signal_all(proc, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                signal_all(proc, signal.SIGKILL)
                proc.wait()


def signal_all(proc: subprocess.Popen, sig: int) -> None:
    """``sig`` to ``proc``'s process group when it leads one (``Server.spawn``), else to it."""
    if os.getpgid(proc.pid) == proc.pid:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)


def manage(env: dict, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def start_ours(name: str, env: dict, workers) -> Server:
    """Migrate, bootstrap, make a token, then serve as ``make run`` does; ``workers``
    starts the worker processes from the environment and a log directory."""
    env = dict(
        env,
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="benchmark-only",
        DJANGO_SETTINGS_MODULE="dashboard.settings",
        DURABLE_EXTRA_GRAPHS=f"{GRAPH}=bench_api_graphs.build,"
        f"{INTERRUPT}=bench_api_graphs.build_interrupting,"
        f"{SPIN}=bench_api_graphs.build_spinning",
        PYTHONPATH=os.pathsep.join([str(GRAPHS_DIR), str(ROOT)]),
    )
    manage(env, "migrate", "--noinput")
    manage(env, "bootstrap")
    token = manage(
        env,
        "shell",
        "-c",
        "from durable.models import Tenant; from durable.tenancy import create_token;"
        " print(create_token(Tenant.default(), 'bench_api')[1])",
    ).split()[-1]
    server = Server(name, api_key=token, env=env)
    logs = WORK / name
    logs.mkdir(parents=True, exist_ok=True)
    server.procs += workers(env, logs)
    port = free_port()
    web = server.spawn(
        [
            *(sys.executable, "-m", "uvicorn", "dashboard.asgi:application"),
            *("--host", "127.0.0.1", "--port", str(port), "--lifespan", "off"),
            *("--timeout-graceful-shutdown", "5", "--log-level", "warning"),
        ],
        logs / "web.log",
        cwd=ROOT,
        env=env,
    )
    server.url = f"http://127.0.0.1:{port}/api"
    wait_until_up(f"{server.url}/openapi.json", web, logs / "web.log")
    return server


def start_ours_pg(url: str, broker: str, name: str = "ours-pg", slots: str = "") -> Server:
    """``slots``: its ``DURABLE_WEB_RUN_SLOTS`` (``""``: the default)."""
    ensure_database(url)
    redis.Redis.from_url(broker).flushdb()  # no task left over from an earlier run
    env = dict(os.environ, DATABASE_URL=url, CELERY_BROKER_URL=broker)
    if slots:
        env["DURABLE_WEB_RUN_SLOTS"] = slots
    server = start_ours(name, env, lambda env, logs: start_workers(2, env, logs))
    server.database = url
    return server


def start_ours_embedded(name: str = "ours-embedded", slots: str = "") -> Server:
    var = WORK / name.removeprefix("ours-")
    shutil.rmtree(var, ignore_errors=True)
    var.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env["DURABLE_VAR_DIR"] = str(var)
    if slots:
        env["DURABLE_WEB_RUN_SLOTS"] = slots

    def worker(env: dict, logs: Path) -> list[subprocess.Popen]:
        log = (logs / "worker.log").open("w")
        return [
            subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "dashboard", "worker",
                 "--loglevel=WARNING", "--concurrency=2", "--beat",
                 f"--schedule={var / 'celerybeat-schedule'}"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            )
        ]  # fmt: skip

    return start_ours(name, env, worker)


def venv(name: str, python: list[str], package: str, env: dict | None = None) -> Path:
    """The virtualenv ``var/peers/<name>`` with ``package``, made on first use."""
    path = PEERS / name
    if not (path / ".installed").exists():
        print(f"installing {package} into {path}", flush=True)
        subprocess.run([*python, "-m", "venv", str(path)], check=True, env=env)
        subprocess.run(
            [str(path / "bin" / "python"), "-m", "pip", "install", "--quiet", package], check=True
        )
        (path / ".installed").touch()
    return path


def start_aegra() -> Server:
    path = venv(
        "aegra",
        ["python3.12"],
        "aegra-api",
        env=dict(os.environ, PYENV_VERSION="3.12.1"),
    )
    ensure_database(AEGRA_URL)
    server = Server("aegra", database=AEGRA_URL)
    port = free_port()
    env = dict(
        os.environ,
        AEGRA_CONFIG=str(GRAPHS_DIR / "langgraph.json"),
        DATABASE_URL=AEGRA_URL,
        AUTH_TYPE="noop",
        CRON_ENABLED="false",
        REDIS_BROKER_ENABLED="false",
        LOG_LEVEL="WARNING",
        OTEL_TARGETS="",
        HOST="127.0.0.1",
        PORT=str(port),
    )
    args = [str(path / "bin" / "python"), "-m", "uvicorn", "aegra_api.main:app",
            "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]  # fmt: skip
    return serve_peer(server, args, port, env, "/info")


def start_agent_server() -> Server:
    path = venv("agentserver", [sys.executable], "langgraph-cli[inmem]")
    server = Server("agent-server")
    port = free_port()
    env = dict(os.environ, LANGSMITH_TRACING="false", LANGGRAPH_CLI_NO_ANALYTICS="1")
    args = [str(path / "bin" / "langgraph"), "dev", "--no-browser", "--no-reload",
            "--host", "127.0.0.1", "--port", str(port), "--config", "langgraph.json"]  # fmt: skip
    return serve_peer(server, args, port, env, "/ok")


def serve_peer(server: Server, args: list[str], port: int, env: dict, health: str) -> Server:
    """Start a peer from the graphs' folder (which its ``langgraph.json`` is in), logging
    to ``var/bench_api/<name>.log``, and wait until ``health`` answers."""
    log = WORK / f"{server.name}.log"
    proc = server.spawn(args, log, cwd=GRAPHS_DIR, env=env)
    server.url = f"http://127.0.0.1:{port}"
    wait_until_up(f"{server.url}{health}", proc, log)
    return server


# -- the rows -----------------------------------------------------------------------


async def timed(call) -> float:
    began = time.perf_counter()
    await call()
    return 1000 * (time.perf_counter() - began)


async def one_wait(client, thread: str) -> None:
    out = await client.runs.wait(thread, GRAPH, input={"n": 0})
    assert out["n"] == 3, out


async def wait_ms(client) -> float:
    thread = (await client.threads.create())["thread_id"]
    return await timed(lambda: one_wait(client, thread))


async def first_event_ms(client) -> float:
    thread = (await client.threads.create())["thread_id"]
    began = time.perf_counter()
    first = None
    async for part in client.runs.stream(thread, GRAPH, input={"n": 0}, stream_mode="updates"):
        if part.event == "updates" and first is None:
            first = 1000 * (time.perf_counter() - began)
    assert first is not None, "no updates event"
    return first


async def interrupt_ms(client) -> float:
    thread = (await client.threads.create())["thread_id"]

    async def round_trip():
        await client.runs.wait(thread, INTERRUPT, input={"n": 0})
        out = await client.runs.wait(thread, INTERRUPT, command={"resume": "yes"})
        assert out["n"] == 3, out

    return await timed(round_trip)


async def throughput(client, per_client: int) -> float:
    async def one_client():
        for _ in range(per_client):
            await one_wait(client, (await client.threads.create())["thread_id"])

    began = time.perf_counter()
    await asyncio.gather(*(one_client() for _ in range(CLIENTS)))
    return CLIENTS * per_client / (time.perf_counter() - began)


async def history_thread(client) -> str:
    thread = (await client.threads.create())["thread_id"]
    for _ in range(3):
        await one_wait(client, thread)
    return thread


async def history_ms(client, thread: str) -> float:
    async def read():
        states = await client.threads.get_history(thread, limit=10)
        assert len(states) == 10, len(states)

    return await timed(read)


ROWS = [
    "runs.wait p50 (ms)",
    "first updates event p50 (ms)",
    "interrupt + resume p50 (ms)",
    f"throughput, {CLIENTS} clients (runs/s)",
    "get_history(limit=10) p50 (ms)",
    "CPU per run, throughput row (ms)",
]


async def measure(servers: list[Server], rounds: int, samples: int, per_client: int) -> dict:
    """{row: {server name: [one figure per round]}}"""
    clients = {s.name: get_client(url=s.url, api_key=s.api_key, timeout=120) for s in servers}
    histories = {}
    for s in servers:  # warm up: imports, compiled graphs, pools, the first plans
        client = clients[s.name]
        for _ in range(3):
            await wait_ms(client)
            await first_event_ms(client)
            await interrupt_ms(client)
        histories[s.name] = await history_thread(client)
        await history_ms(client, histories[s.name])
    rows = {
        ROWS[0]: lambda c, name: wait_ms(c),
        ROWS[1]: lambda c, name: first_event_ms(c),
        ROWS[2]: lambda c, name: interrupt_ms(c),
        ROWS[4]: lambda c, name: history_ms(c, histories[name]),
    }
    results: dict[str, dict[str, list[float]]] = {
        row: {s.name: [] for s in servers} for row in ROWS
    }
    for r in range(rounds):
        order = servers[r % len(servers) :] + servers[: r % len(servers)]
        print(f"round {r + 1}/{rounds}: {', '.join(s.name for s in order)}", flush=True)
        for row in ROWS:
            for s in order:
                client = clients[s.name]
                if row == ROWS[5]:
                    continue  # taken with the throughput row
                if row == ROWS[3]:
                    cpu = s.cpu_seconds()
                    value = await throughput(client, per_client)
                    cpu = s.cpu_seconds() - cpu
                    results[ROWS[5]][s.name].append(1000 * cpu / (CLIENTS * per_client))
                else:
                    value = statistics.median(
                        [await rows[row](client, s.name) for _ in range(samples)]
                    )
                results[row][s.name].append(value)
    for client in clients.values():
        await client.aclose()
    return results


def ratio(mine: list[float], theirs: list[float]) -> str:
    return f"{statistics.median(a / b for a, b in zip(mine, theirs, strict=True)):.2f}"


def report(results: dict, names: list[str]) -> str:
    header = "| row | " + " | ".join(names)
    rule = "| --- |" + " --- |" * len(names)
    ratios = []
    if "aegra" in names:
        ratios += [(n, "aegra") for n in names if n != "aegra"]
    ratios.append(("ours-embedded", "ours-pg"))
    ratios += [(n.removesuffix(SLOTS_OFF), n) for n in names if n.endswith(SLOTS_OFF)]
    header += "".join(f" | {a} / {b}" for a, b in ratios) + " |"
    rule += " --- |" * len(ratios)
    lines = [header, rule]
    for row, by_server in results.items():
        cells = []
        for name in names:
            values = by_server[name]
            digits = 1 if max(values) < 100 else 0
            cells.append(
                f"{statistics.median(values):.{digits}f}"
                f" ({min(values):.{digits}f}-{max(values):.{digits}f})"
            )
        cells += [ratio(by_server[a], by_server[b]) for a, b in ratios]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=10, help="per row, server and round")
    parser.add_argument("--per-client", type=int, default=3, help="runs per throughput client")
    parser.add_argument("--peers", action="store_true", help="also Aegra and the Agent Server")
    parser.add_argument(
        "--slots-off",
        action="store_true",
        help="also both of our stacks with DURABLE_WEB_RUN_SLOTS=0 (every run to the workers)",
    )
    parser.add_argument("--no-agent-server", action="store_true", help="with --peers: Aegra only")
    parser.add_argument("--url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL))
    parser.add_argument("--broker", default=DEFAULT_BROKER)
    args = parser.parse_args()
    began = time.perf_counter()
    write_graphs()
    starters = [lambda: start_ours_pg(args.url, args.broker), start_ours_embedded]
    if args.slots_off:
        starters += [
            lambda: start_ours_pg(
                f"{args.url}_slots0",
                args.broker.rsplit("/", 1)[0] + "/9",
                "ours-pg" + SLOTS_OFF,
                "0",
            ),
            lambda: start_ours_embedded("ours-embedded" + SLOTS_OFF, "0"),
        ]
    if args.peers:
        starters += [start_aegra] + ([] if args.no_agent_server else [start_agent_server])
    servers: list[Server] = []
    try:
        for start in starters:
            servers.append(start())
            print(f"{servers[-1].name} up at {servers[-1].url}", flush=True)
        results = asyncio.run(measure(servers, args.rounds, args.samples, args.per_client))
    finally:
        for server in STARTED:
            server.stop()
    print(
        textwrap.dedent(f"""
        {args.rounds} rounds, {args.samples} samples a row per server and round,
        {CLIENTS} clients x {args.per_client} runs for throughput; median (min-max over rounds)
        """)
    )
    print(report(results, [s.name for s in servers]))
    print(f"\nwall time {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
