"""The smoke pass of ``make smoke``: the project as ``make run`` serves it, on whichever
Python runs this file, end to end through the official client.

In a temporary data folder (``DURABLE_VAR_DIR``) on the embedded defaults (SQLite and
kombu's SQLAlchemy broker, whatever ``DATABASE_URL``/``CELERY_BROKER_URL`` say), it
migrates, makes a tenant's API token, starts a real Celery worker and uvicorn, then with
``langgraph_sdk`` runs ``expense_approval`` to its approval interrupt and approves it.
Exits non-zero, with the processes' logs, when any step fails. Run from the checkout's
root with the venv that has the project and ``langgraph-sdk`` installed (``.[smoke]``).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 60  # seconds for a process to come up or a run to end


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(check, what: str):
    deadline = time.monotonic() + TIMEOUT
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} within {TIMEOUT} s")
        time.sleep(0.2)


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def start(command: list[str], env: dict, log: Path) -> subprocess.Popen:
    # Its own process group, so stopping it takes the worker's pool processes too.
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(proc: subprocess.Popen):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def make_token(env: dict) -> str:
    """A new operator token of the default tenant, made by the project's own code."""
    code = (
        "import django; django.setup()\n"
        "from durable.models import Tenant\n"
        "from durable.tenancy import create_token\n"
        "print(create_token(Tenant.default(), 'smoke')[1])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, check=True, capture_output=True
    )
    return out.stdout.decode().strip().splitlines()[-1]


def drive(url: str, token: str):
    """The README's API example: start, read the interrupt, approve, check the outcome."""
    from langgraph_sdk import get_sync_client

    from examples.expense_approval import EXAMPLE_INPUT

    client = get_sync_client(url=url, api_key=token)
    thread = client.threads.create()
    tid = thread["thread_id"]
    out = client.runs.wait(tid, "expense_approval", input=EXAMPLE_INPUT)
    interrupts = out.get("__interrupt__") or []
    assert len(interrupts) == 1, f"expected one approval interrupt, got {out!r}"
    request = interrupts[0]["value"]["action_requests"][0]
    assert request["name"] == "pay_expense", request
    assert request["args"]["amount"] == EXAMPLE_INPUT["amount"], request
    print(f"smoke: interrupted for approval: {request['description']}")

    out = client.runs.wait(
        tid, "expense_approval", command={"resume": {"decisions": [{"type": "approve"}]}}
    )
    assert out.get("status") == "paid", f"expected a paid claim, got {out!r}"
    runs = client.runs.list(tid)
    statuses = sorted(run["status"] for run in runs)
    assert statuses == ["interrupted", "success"], statuses
    thread = client.threads.get(tid)
    assert thread["status"] == "idle", thread["status"]
    print(f"smoke: approved and paid, reference {out['payment']['reference']}")


def main() -> int:
    began = time.monotonic()
    var = Path(tempfile.mkdtemp(prefix="durable-smoke-"))
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "CELERY_BROKER_URL", "DURABLE_EXTRA_GRAPHS")
    }
    env |= {
        "DURABLE_VAR_DIR": str(var),
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "PYTHONUNBUFFERED": "1",
    }
    os.environ.update(env)  # for this process's own import of the example
    print(f"smoke: Python {sys.version.split()[0]} ({sys.executable}), data in {var}")
    procs: list[tuple[subprocess.Popen, Path]] = []
    ok = False
    try:
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
            cwd=ROOT,
            env=env,
            check=True,
        )
        token = make_token(env)
        worker_log = var / "worker.log"
        worker = start(
            [sys.executable, "-m", "celery", "-A", "dashboard", "worker", "--loglevel=INFO"]
            + ["--concurrency=1", "--without-gossip", "--without-mingle", "--without-heartbeat"],
            env,
            worker_log,
        )
        procs.append((worker, worker_log))
        port = free_port()
        web_log = var / "web.log"
        web = start(
            [sys.executable, "-m", "uvicorn", "dashboard.asgi:application"]
            + ["--host", "127.0.0.1", "--port", str(port), "--lifespan", "off"],
            env,
            web_log,
        )
        procs.append((web, web_log))
        wait_for(lambda: "ready." in worker_log.read_text(errors="replace"), "worker ready")
        wait_for(lambda: listening(port), "web server listening")
        drive(f"http://127.0.0.1:{port}/api", token)
        ok = True
    finally:
        for proc, _ in procs:
            stop(proc)
        if not ok:
            for _, log in procs:
                print(f"--- {log.name} ---\n{log.read_text(errors='replace')[-4000:]}")
        shutil.rmtree(var, ignore_errors=True)
    print(f"smoke: passed in {time.monotonic() - began:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
