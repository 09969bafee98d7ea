"""The API against its own OpenAPI document: schemathesis (its command line, as a user
runs it) fuzzes every operation of ``GET /api/openapi.json`` on the live server, with a
real worker running what it starts, and runs all of its checks: no server error, no
status, content type, header or body the document does not describe, schema-violating
requests refused and schema-valid ones accepted, ``405`` with ``Allow`` for a method an
operation does not take, auth enforced. Where a check's expectation is wrong for this
API, ``schemathesis.toml`` beside this file says which and why.

Bounded by ``--max-time`` and a fixed ``--seed``, so that a pass is repeatable; the
cases it finds failing are shown with a ``curl`` that reproduces each."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.django_db(transaction=True)

CONFIG = Path(__file__).with_name("schemathesis.toml")
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
SECONDS = 60


def test_the_openapi_document_is_valid_and_describes_refusals(web):
    document = httpx.get(f"{web.url}/api/openapi.json").json()
    assert document["openapi"].startswith("3.1")
    run = document["paths"]["/api/threads/{thread_id}/runs"]["post"]["responses"]
    assert set(run) >= {"200", "400", "401", "403", "404", "409", "413", "415", "422"}
    assert run["409"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorResponse"
    }
    assert document["components"]["schemas"]["ErrorResponse"]["required"] == ["detail", "field"]
    stream = document["paths"]["/api/threads/{thread_id}/runs/stream"]["post"]["responses"]
    assert list(stream["200"]["content"]) == ["text/event-stream"]
    assert run["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Run"
    }


def test_schemathesis_finds_nothing(web, worker, api_key, tmp_path):
    found = subprocess.run(
        [
            *(str(SCHEMATHESIS), "--config-file", str(CONFIG), "--no-color", "run"),
            f"{web.url}/api/openapi.json",
            *("--header", f"x-api-key: {api_key}"),
            *("--checks", "all", "--max-time", str(SECONDS), "--seed", "1"),
            *("--request-timeout", "20", "--generation-database", "none"),
            *("--report", "junit", "--report-dir", str(tmp_path)),
        ],
        cwd=tmp_path,  # where it keeps its cache of failing cases
        capture_output=True,
        text=True,
        timeout=SECONDS * 4,
    )
    print(found.stdout[found.stdout.find("SUMMARY") :])  # operations, cases, time (-s)
    assert found.returncode == 0, found.stdout[-20000:] + found.stderr[-5000:]
    assert "Tested: " in found.stdout
