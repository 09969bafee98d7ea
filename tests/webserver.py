"""The ``web`` fixture: the console served by uvicorn (ASGI), as ``make run`` serves it,
in its own process on the test database.

pytest-django's ``live_server`` is a threaded WSGI server: under WSGI Django collects an
async streaming response whole before it sends it, so server-sent events would arrive
only when a run ends. Tests of the API and of live progress use this real ASGI server.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from tests.conftest import ROOT, wait_for, worker_env

WEB_LOG = settings.VAR_DIR / "test-web.log"
WEB_APPLICATION_NAME = "durable-test-web"
# A small pool for the web process, so the connection bound is visible in tests.
WEB_POOL_SIZE = 4


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class WebProcess:
    def __init__(self, log_path: Path):
        self.log_path = log_path
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self):
        env = worker_env()
        env.update(PGAPPNAME=WEB_APPLICATION_NAME, DURABLE_DB_POOL_SIZE=str(WEB_POOL_SIZE))
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "uvicorn", "dashboard.asgi:application"),
                *("--host", "127.0.0.1", "--port", str(self.port), "--lifespan", "off"),
                *("--timeout-graceful-shutdown", "5"),
            ],
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        wait_for(self._ready, timeout=60, message="the web server to answer")
        return self

    def _ready(self) -> bool:
        assert self.proc.poll() is None, f"the web server exited:\n{self.log()}"
        try:
            return httpx.get(f"{self.url}/api/openapi.json").status_code == 200
        except httpx.TransportError:
            return False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


@pytest.fixture(scope="session")
def web(django_db_setup, django_db_blocker):
    """uvicorn serving ``dashboard.asgi:application`` on the test database; ``.url``."""
    process = WebProcess(WEB_LOG).start()
    yield process
    process.stop()
