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
import queue
import shutil
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from durable import conf

log = logging.getLogger(__name__)
# What answers the calls the Node side makes for a request: (op, fields) -> result.
Calls = Callable[[str, dict], Any]

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
        # Each request's queue gets its answer and the calls made on its behalf.
        self._waiting: dict[int, queue.SimpleQueue] = {}
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
            key = message["for"] if "call" in message else message.get("id")
            with self._lock:
                waiting = self._waiting.get(key)
            if waiting is not None:
                waiting.put(message)
        gone = JSRuntimeGone(f"the Node process exited ({self.proc.wait()})")
        if not self._ready.done():
            self._ready.set_exception(gone)
        with self._lock:
            waiting_all = list(self._waiting.values())
        for waiting in waiting_all:
            waiting.put(gone)

    def _write(self, message: dict) -> None:
        with self._lock:
            self.proc.stdin.write(json.dumps(message) + "\n")
            self.proc.stdin.flush()

    def request(
        self, op: str, calls: Callable[[str, dict], Any] | None = None, **fields: Any
    ) -> Any:
        """Send request ``op`` and wait for its answer. Calls the Node side makes on its
        behalf (a checkpointer's reads and writes) are answered by ``calls(op, fields)``
        in this thread, so they use this thread's database connection."""
        inbox: queue.SimpleQueue = queue.SimpleQueue()
        with self._lock:
            request_id = next(self._ids)
            self._waiting[request_id] = inbox
        try:
            self._write({"id": request_id, "op": op, **fields})
            while True:
                message = inbox.get(timeout=REQUEST_TIMEOUT_SECONDS)
                if isinstance(message, Exception):
                    raise message
                if "call" in message:
                    self._write(_answer(message, calls))
                    continue
                if not message["ok"]:
                    raise JSGraphError(message["error"]["type"], message["error"]["message"])
                return message["result"]
        finally:
            with self._lock:
                self._waiting.pop(request_id, None)

    def stop(self) -> None:
        if self.alive():
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def _answer(call: dict, calls: Calls | None) -> dict:
    fields = {k: v for k, v in call.items() if k not in ("call", "for", "op")}
    try:
        if calls is None:
            raise RuntimeError(f"nothing answers {call['op']} for this request")
        return {"reply": call["call"], "ok": True, "result": calls(call["op"], fields)}
    except Exception as exc:  # the JS side raises it in the graph's code path
        log.exception("JS call %s failed", call["op"])
        return {"reply": call["call"], "ok": False, "error": f"{type(exc).__name__}: {exc}"}


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


def request(op: str, calls: Calls | None = None, **fields: Any) -> Any:
    return runtime().request(op, calls, **fields)


def load_errors() -> dict[str, str]:
    """Each registered JS graph that failed to load, with its error (empty without any)."""
    if not conf.DURABLE_JS_GRAPHS:
        return {}
    return dict(runtime().errors)
