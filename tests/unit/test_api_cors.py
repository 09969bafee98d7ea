"""A browser UI on another origin (Agent Chat UI, agent-inbox) can call the API: its
preflight ``OPTIONS`` is answered on every route for the origins of
``DURABLE_CORS_ALLOWED_ORIGINS`` with the headers the clients send (``x-api-key``,
``authorization``, ``content-type``), and a real request's answer names the origin. Other
origins, and the console, get no CORS headers. Through Django's test client."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from durable import engine

pytestmark = pytest.mark.django_db

UI = "http://localhost:3000"  # where Agent Chat UI and agent-inbox serve by default


def preflight(path: str, method: str, origin: str = UI):
    return Client().options(
        path,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": "content-type,x-api-key,authorization",
        },
    )


def _routes() -> list[tuple[str, str]]:
    """``(method, path)`` of every route of the API, ids filled in."""
    from durable.api import api as ninja_api

    routes = []
    for path, operations in ninja_api.get_openapi_schema()["paths"].items():
        concrete = re.sub(r"\{[^}]+\}", "x", path)
        routes += [(method.upper(), concrete) for method in operations]
    return routes


@pytest.mark.parametrize(("method", "path"), _routes())
def test_every_api_route_answers_a_preflight_from_an_allowed_origin(method, path):
    response = preflight(path, method)
    assert response.status_code == 200, (method, path)
    assert response["Access-Control-Allow-Origin"] == UI
    allowed = {h.strip() for h in response["Access-Control-Allow-Headers"].split(",")}
    assert {"x-api-key", "authorization", "content-type"} <= allowed
    assert method in response["Access-Control-Allow-Methods"]
    # Tokens travel in a header: no cookie is let across origins.
    assert "Access-Control-Allow-Credentials" not in response


# The API reads on connections of its own (``durable.db.borrow``): they must see the thread.
@pytest.mark.django_db(transaction=True)
def test_a_real_request_names_the_origin_and_exposes_where_the_run_is(api_key):
    engine.create_thread("expense_approval", name="t1")
    client = Client(headers={"x-api-key": api_key, "Origin": UI})
    response = client.get("/api/threads/t1")
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == UI
    exposed = response["Access-Control-Expose-Headers"].lower()
    assert "content-location" in exposed


def test_another_origin_gets_no_cors_headers():
    response = preflight("/api/threads/search", "POST", origin="https://evil.example")
    assert "Access-Control-Allow-Origin" not in response


def test_the_origins_come_from_the_setting(settings):
    settings.CORS_ALLOWED_ORIGINS = ["https://chat.example.com"]
    assert "Access-Control-Allow-Origin" not in preflight("/api/threads/search", "POST")
    allowed = preflight("/api/threads/search", "POST", origin="https://chat.example.com")
    assert allowed["Access-Control-Allow-Origin"] == "https://chat.example.com"


def test_the_console_is_not_opened_to_other_origins():
    response = preflight("/threads/", "GET")
    assert "Access-Control-Allow-Origin" not in response
