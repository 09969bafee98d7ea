"""LangGraph.js graphs (``DURABLE_JS_GRAPHS``), run by a Node process of this Python
process.

- ``runtime/``: the Node side, its ``package.json`` and lock file (``make js-runtime``
  installs it with ``npm ci``) and ``server.mjs``, which loads the registered graphs and
  answers requests as JSON lines on its stdin/stdout; ``remote_saver.mjs``, the
  checkpointer it runs graphs with, whose every read and write is a call back here.
- ``process.py``: ``runtime()``, the one Node process of this Python process, started
  the first time a JS graph is needed and again if it died; ``request(op, calls,
  **fields)``, whose ``calls`` answer what the Node side asks on the request's behalf in
  the requesting thread.
- ``saver_calls.py``: those answers for a checkpointer, given by ``DjangoSaver``, the one
  writer of checkpoints, blobs and writes.

Without the setting nothing here starts: ``js_graph_names()`` is empty and no Node
process exists."""

from durable.js.process import (
    JSGraphError,
    JSRuntimeMissing,
    js_graph_names,
    load_errors,
    request,
    runtime,
)

__all__ = [
    "JSGraphError",
    "JSRuntimeMissing",
    "js_graph_names",
    "load_errors",
    "request",
    "runtime",
]
