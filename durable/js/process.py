"""The Node process that runs this Python process's JS graphs.

One per Python process (the web process, each worker pool process), started on first
use, with the registered graphs on its command line, so a process that never runs a JS
graph starts none. Requests and answers are JSON lines, each answer naming its request's
id, so threads of this process may share the one channel. A process that died (killed,
crashed) is started again on the next request; the request under way when it died fails
with ``JSRuntimeGone``."""

from __future__ import annotations

import itertools
import json
import logging
import os
import shutil
import subprocess
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from durable import conf

log = logging.getLogger(__name__)

RUNTIME_DIR = Path(__file__).resolve().parent / "runtime"
NODE_MODULES = RUNTIME_DIR / "node_modules"
# Loading a graph transpiles its TypeScript; the first start also warms Node's caches.
START_TIMEOUT_SECONDS = 60.0
REQUEST_TIMEOUT_SECONDS = 300.0


class JSRuntimeMissing(RuntimeError):
    """Node or the runtime's install is missing: ``make js-runtime`` installs it."""


class JSRuntimeGone(RuntimeError):
    """The Node process died while a request was under way."""


class JSGraphError(RuntimeError):
    """The JS side answered a request with an error (its type and message)."""

    def __init__(self, type_: str, message: str):
        super().__init__(message)
        self.type = type_


def js_graph_names() -> list[str]:
    return sorted(conf.DURABLE_JS_GRAPHS)


def _argv() -> list[str]:
    node = shutil.which("node")
    if node is None:
        raise JSRuntimeMissing("node is not on PATH: JS graphs need Node 20")
    if not (NODE_MODULES / "@langchain" / "langgraph").is_dir():
        raise JSRuntimeMissing(f"{NODE_MODULES} has no @langchain/langgraph: run `make js-runtime`")
    specs = [f"{name}={target}" for name, target in sorted(conf.DURABLE_JS_GRAPHS.items())]
    return [node, str(RUNTIME_DIR / "server.mjs"), *specs]


class Runtime:
    """A running Node process and the requests waiting for its answers."""

    def __init__(self):
        env = {**os.environ, "NODE_PATH": str(NODE_MODULES)}
        self.proc = subprocess.Popen(
            _argv(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,  # the Node side's log lines go to this process's stderr
            env=env,
            text=True,
            bufsize=1,
        )
        self._ids = itertools.count(1)
        self._waiting: dict[int, Future] = {}
        self._lock = threading.Lock()
        self._ready: Future = Future()
        self._reader = threading.Thread(target=self._read, name="durable-js", daemon=True)
        self._reader.start()
        hello = self._ready.result(timeout=START_TIMEOUT_SECONDS)
        self.loaded: list[str] = hello["loaded"]
        self.errors: dict[str, str] = hello["errors"]
        for name, error in self.errors.items():
            log.error("JS graph %s failed to load: %s", name, error)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _read(self) -> None:
        for line in self.proc.stdout:
            message = json.loads(line)
            if message.get("ready"):
                self._ready.set_result(message)
                continue
            with self._lock:
                future = self._waiting.pop(message.get("id"), None)
            if future is not None:
                future.set_result(message)
        gone = JSRuntimeGone(f"the Node process exited ({self.proc.wait()})")
        if not self._ready.done():
            self._ready.set_exception(gone)
        with self._lock:
            waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            future.set_exception(gone)

    def request(self, op: str, **fields: Any) -> Any:
        future: Future = Future()
        with self._lock:
            request_id = next(self._ids)
            self._waiting[request_id] = future
            self.proc.stdin.write(json.dumps({"id": request_id, "op": op, **fields}) + "\n")
            self.proc.stdin.flush()
        answer = future.result(timeout=REQUEST_TIMEOUT_SECONDS)
        if not answer["ok"]:
            raise JSGraphError(answer["error"]["type"], answer["error"]["message"])
        return answer["result"]

    def stop(self) -> None:
        if self.alive():
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()


_runtime: Runtime | None = None
_start_lock = threading.Lock()


def runtime() -> Runtime:
    """This process's Node process, started now if there is none or it died."""
    global _runtime
    with _start_lock:
        if _runtime is None or not _runtime.alive():
            if _runtime is not None:
                log.warning("the JS runtime exited (%s); starting it again", _runtime.proc.poll())
            _runtime = Runtime()
        return _runtime


def request(op: str, **fields: Any) -> Any:
    return runtime().request(op, **fields)


def load_errors() -> dict[str, str]:
    """Each registered JS graph that failed to load, with its error (empty without any)."""
    if not conf.DURABLE_JS_GRAPHS:
        return {}
    return dict(runtime().errors)
