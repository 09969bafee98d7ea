"""The official JS SDK (``@langchain/langgraph-sdk``, pinned in ``tests/js/package.json``
and its lock file) against the live server.

``install()`` runs ``npm ci`` into ``tests/js/node_modules`` when it is missing or was
installed from another lock file (a stamp of the lock file's digest says which), so the
suite works on a clean clone with Node 20 and npm on ``PATH``. ``run_script`` starts one
``node`` process for a script of ``tests/js/`` that runs many scenarios (``lib.mjs``
says how), each on a tenant of its own, and returns what each scenario returned.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

from durable.models import Tenant
from durable.tenancy import create_token

JS = Path(__file__).resolve().parents[1] / "js"
# Far longer than a script takes (each scenario has its own, shorter, limit).
SCRIPT_TIMEOUT_SECONDS = 600


def lock_digest(folder: Path) -> str:
    """The SHA-256 of ``folder``'s ``package-lock.json``, hex."""
    return hashlib.sha256((folder / "package-lock.json").read_bytes()).hexdigest()


def npm_ci(folder: Path) -> None:
    """``npm ci`` in ``folder`` unless its ``node_modules`` already holds this lock file's
    packages (a stamp of the lock file's digest says which)."""
    digest = lock_digest(folder)
    stamp = folder / "node_modules" / ".durable-lock-sha256"
    if stamp.exists() and stamp.read_text() == digest:
        return
    subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=folder,
        check=True,
        timeout=SCRIPT_TIMEOUT_SECONDS,
    )
    stamp.write_text(digest)


def install() -> None:
    """The JS SDK's packages, from ``tests/js``'s lock file (``npm_ci``)."""
    npm_ci(JS)


def scenario_names(script: str) -> list[str]:
    out = subprocess.run(
        ["node", script, "--list"], cwd=JS, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def scenario_keys(names: list[str], prefix: str) -> dict[str, str]:
    """An operator's API key of a new tenant per scenario (``<prefix>-<name>``)."""
    keys = {}
    for name in names:
        slug = f"{prefix}-{name}".replace("_", "-")
        tenant = Tenant.objects.create(slug=slug, name=slug)
        keys[name] = create_token(tenant, "js-sdk")[1]
    return keys


def run_script(script: str, api_url: str, keys: dict[str, str], tmp: Path) -> dict:
    """Run ``tests/js/<script>`` against ``api_url``: ``{scenario: result}``."""
    env = dict(os.environ)
    env.update(
        DURABLE_API_URL=api_url,
        DURABLE_API_KEYS=json.dumps(keys),
        DURABLE_JS_TMP=str(tmp),
        # The SDK would read a key from these when a scenario has none.
        LANGGRAPH_API_KEY="",
        LANGSMITH_API_KEY="",
        LANGCHAIN_API_KEY="",
    )
    out = subprocess.run(
        ["node", script],
        cwd=JS,
        env=env,
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT_SECONDS,
    )
    assert out.returncode == 0, f"node {script} failed:\n{out.stderr}"
    return json.loads(out.stdout)


def result(results: dict, scenario: str) -> dict:
    """What ``scenario`` returned; fails with the SDK's error when it threw."""
    found = results[scenario]
    assert "__error__" not in found, f"{scenario} threw: {found['__error__']}"
    return found
