"""Agent Chat UI, built from the npm registry and served on an origin of its own.

Its source is not in this repository: ``create-agent-chat-app`` (pinned in
``tests/chat_ui/package.json`` and its lock file, with the template's build and runtime
dependencies) ships it as its ``vite`` template. ``build()`` runs ``npm ci`` into
``tests/chat_ui/node_modules`` when it is missing or was installed from another lock
file, copies the template into ``<var>/chat-ui/`` and runs ``vite build`` there, and
keeps the result until the lock file changes (a stamp of its digest, as
``tests.helpers.js_sdk`` keeps its packages). On a clean machine that takes about half a
minute; afterwards nothing.

The build holds no setting of ours: the UI takes the server and the graph from its
address (``?apiUrl=...&assistantId=...``) and the API key from the browser's local
storage (``lg:chat:apiKey``), which it sends as ``X-Api-Key`` (``page_url``,
``API_KEY_STORAGE``). ``serve()`` serves the built files from a port of their own, so
the page's origin is not the API's and every call is a cross-origin one.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import threading
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlencode

from django.conf import settings

from tests.helpers.js_sdk import lock_digest, npm_ci

PACKAGE = Path(__file__).resolve().parents[1] / "chat_ui"
NODE_MODULES = PACKAGE / "node_modules"
TEMPLATE = NODE_MODULES / "create-agent-chat-app" / "templates" / "vite"
BUILD = settings.VAR_DIR / "chat-ui"
DIST = BUILD / "dist"
BUILD_STAMP = DIST / ".durable-lock-sha256"
API_KEY_STORAGE = "lg:chat:apiKey"
TIMEOUT_SECONDS = 600


def build() -> Path:
    """The directory of the built UI (``index.html`` and its assets)."""
    digest = lock_digest(PACKAGE)
    if BUILD_STAMP.exists() and BUILD_STAMP.read_text() == digest:
        return DIST
    npm_ci(PACKAGE)
    shutil.rmtree(BUILD, ignore_errors=True)
    shutil.copytree(TEMPLATE, BUILD)
    # The template resolves its imports from a node_modules beside it: ours.
    (BUILD / "node_modules").symlink_to(NODE_MODULES)
    # ``vite build`` alone: the template's own build script adds turbo and a type check,
    # which the UI's behaviour does not depend on.
    subprocess.run(
        [str(NODE_MODULES / ".bin" / "vite"), "build", "--logLevel", "error"],
        cwd=BUILD,
        check=True,
        timeout=TIMEOUT_SECONDS,
    )
    BUILD_STAMP.write_text(digest)
    return DIST


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


@contextmanager
def serve(directory: Path):
    """Serve ``directory`` at ``http://127.0.0.1:<port>`` (the yielded origin) from a
    thread, until the block ends."""
    handler = functools.partial(_Quiet, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def page_url(origin: str, api_url: str, assistant_id: str) -> str:
    """The UI's address, set to talk to the graph ``assistant_id`` at ``api_url``."""
    return f"{origin}/?{urlencode({'apiUrl': api_url, 'assistantId': assistant_id})}"
