# ruff: noqa: E501  (the matrix reads best one route a line)
"""The access matrix: every console URL and every API route, asked by an anonymous
visitor, by a viewer of the thread's tenant, and by an operator of another tenant.

The lists below are checked against the URLconf and the API's OpenAPI schema, so a new
URL or route without a row here fails the suite.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from durable.api import api
from durable.engine import create_assistant
from durable.models import Cron, Role, Run, RunEvent, Tenant
from durable.persistence.store import DjangoStore, ScopedStore
from durable.tenancy import create_token
from tests.helpers.threads import at_interrupt, everything, head
from tests.helpers.users import member

pytestmark = pytest.mark.django_db(transaction=True)

# Console URL name -> (method, what it needs, whether it acts). "thread" URLs name a
# thread of the tenant; "tenant" URLs show the caller's own tenant, so another
# tenant's operator gets their own (empty) page, not a 404.
CONSOLE = {
    "threads": ("GET", "tenant", False),
    "start-run": ("POST", "tenant", True),
    "thread": ("GET", "thread", False),
    "resume": ("POST", "thread", True),
    "run-events": ("GET", "run", False),
    "thread-history": ("GET", "thread", False),
    "checkpoint": ("GET", "checkpoint", False),
    "diff": ("GET", "thread", False),
    "thread-graph": ("GET", "thread", False),
    "thread-divergence": ("GET", "thread", False),
    "run-divergence": ("GET", "run", False),
    "inbox": ("GET", "tenant", False),
    "inbox-thread": ("GET", "thread", False),
    "inbox-answer": ("POST", "thread", True),
    "inbox-close": ("POST", "thread", True),
    "inbox-bulk": ("POST", "tenant", True),
    "fork": ("POST", "checkpoint", True),
    "fork-preview": ("POST", "checkpoint", True),
    "replay": ("POST", "checkpoint", True),
    "run": ("GET", "run", False),
    "run-event": ("GET", "event", False),
    "checkpoint-json": ("GET", "checkpoint", False),
    "reveal": ("POST", "checkpoint", True),
    "cancel-run": ("POST", "run", True),
    "store": ("GET", "tenant", False),
    "audit": ("GET", "tenant", False),
    "operations": ("GET", "tenant", False),
    "crons": ("GET", "tenant", False),
    "cron-enable": ("POST", "cron", True),
    "cron-delete": ("POST", "cron", True),
    "assistants": ("GET", "tenant", False),
    "assistant": ("GET", "assistant", False),
    "assistant-latest": ("POST", "assistant", True),
    "assistant-diff": ("GET", "assistant", False),
    "assistant-delete": ("POST", "assistant", True),
    "assistant-run": ("POST", "assistant", True),
    "switch-tenant": ("POST", "tenant", False),
    # For the tenant's admins only: a viewer (and another tenant's operator) gets 403.
    "tenant-settings": ("POST", "tenant", True),
}
# Outside the matrix: the login pages themselves, the Django admin (its own login) and
# Prometheus' scrape (its own guard: tests/unit/test_metrics.py).
NOT_IN_MATRIX = {"login", "logout", "metrics"}


def console_names() -> set[str]:
    names = set()
    for entry in get_resolver().url_patterns:
        if isinstance(entry, URLPattern) and entry.name:
            names.add(entry.name)
        elif isinstance(entry, URLResolver) and entry.namespace not in ("admin", "api"):
            names.update(p.name for p in entry.url_patterns if p.name)
    return names - NOT_IN_MATRIX


def test_the_matrix_lists_every_console_url():
    assert console_names() == set(CONSOLE)


@pytest.fixture
def world():
    """A thread at an interrupt (default tenant) with an ended run; a viewer of that
    tenant; an operator of tenant ``globex``."""
    thread = at_interrupt()
    run = Run.objects.create(
        thread=thread, graph=thread.graph, kind="start", status=Run.Status.INTERRUPTED
    )
    globex = Tenant.objects.create(slug="globex", name="Globex")
    ScopedStore(DjangoStore(), ("default",)).put(("notes",), "k", {"v": 1})
    RunEvent.objects.append(run.pk, RunEvent.LIFECYCLE, {"status": "interrupted"})
    cron = Cron.objects.create(
        tenant=Tenant.default(),
        assistant_id="expense_approval",
        graph="expense_approval",
        schedule="0 * * * *",
    )
    viewer, foreign = Client(), Client()
    viewer.force_login(member("vera", role=Role.VIEWER))
    foreign.force_login(member("mallory", globex, Role.OPERATOR))
    return {
        "thread": thread,
        "run": run,
        "cron": cron,
        "checkpoint": head(thread),
        "globex": globex,
        "assistant": create_assistant(Tenant.default(), "expense_approval"),
        "viewer": viewer,
        "foreign": foreign,
        "anonymous": Client(),
    }


def console_url(name: str, needs: str, world: dict) -> str:
    thread, checkpoint = world["thread"], world["checkpoint"]
    args = {
        "tenant": [],
        "thread": [thread.pk],
        "run": [world["run"].pk],
        "checkpoint": [thread.pk, checkpoint],
        "event": [world["run"].pk, 1],
        "cron": [world["cron"].pk],
        "assistant": [world["assistant"].assistant_id],
    }[needs]
    query = f"?a={checkpoint}&b={checkpoint}" if name == "diff" else ""
    query = "?a=1&b=1" if name == "assistant-diff" else query
    return reverse(name, args=args) + query


@pytest.mark.parametrize("name", sorted(CONSOLE))
def test_console_access(world, name):
    method, needs, acts = CONSOLE[name]
    url = console_url(name, needs, world)
    before = everything()

    def ask(who: str):
        c = world[who]
        return c.get(url) if method == "GET" else c.post(url, {"reason": "x"})

    anonymous = ask("anonymous")
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    viewer = ask("viewer").status_code
    assert viewer == (403 if acts else (200 if method == "GET" else 302)), viewer
    foreign = ask("foreign").status_code
    if needs == "tenant":
        assert foreign != 404
    else:
        assert foreign == 404, foreign
    assert everything() == before


# -- the API ---------------------------------------------------------------------------

# (method, path, body, whether it acts, whether it names a thread)
T = "/api/threads/{thread}"
STATELESS = {"assistant_id": "expense_approval", "input": {"employee": "x", "amount": 1}}
CRON = {"schedule": "0 * * * *"} | STATELESS
API = [
    ("POST", "/api/assistants/search", {}, False, False),
    ("GET", "/api/assistants/{assistant_id}", None, False, False),
    ("POST", "/api/threads", {}, True, False),
    ("POST", "/api/threads/search", {}, False, False),
    ("POST", "/api/threads/count", {}, False, False),
    ("GET", T, None, False, True),
    ("PATCH", T, {"metadata": {"team": "x"}}, True, True),
    ("DELETE", T, None, True, True),
    ("GET", T + "/state", None, False, True),
    ("POST", T + "/state", {"values": {"amount": 1}}, True, True),
    (
        "POST",
        T + "/state/checkpoint",
        {"checkpoint": {"checkpoint_id": "{checkpoint}"}},
        False,
        True,
    ),
    ("GET", T + "/state/{checkpoint}", None, False, True),
    ("POST", T + "/history", {}, False, True),
    (
        "POST",
        T + "/runs",
        {"assistant_id": "expense_approval", "command": {"resume": 1}},
        True,
        True,
    ),
    ("GET", T + "/runs", None, False, True),
    (
        "POST",
        T + "/runs/wait",
        {"assistant_id": "expense_approval", "command": {"resume": 1}},
        True,
        True,
    ),
    (
        "POST",
        T + "/runs/stream",
        {"assistant_id": "expense_approval", "command": {"resume": 1}},
        True,
        True,
    ),
    ("GET", T + "/runs/{run}", None, False, True),
    ("GET", T + "/runs/{run}/join", None, False, True),
    ("GET", T + "/runs/{run}/stream", None, False, True),
    ("POST", T + "/runs/{run}/cancel", None, True, True),
    (
        "PUT",
        "/api/store/items",
        {"namespace": ["notes"], "key": "k", "value": {"v": 2}},
        True,
        False,
    ),
    ("GET", "/api/store/items?namespace=notes&key=k", None, False, False),
    ("DELETE", "/api/store/items", {"namespace": ["notes"], "key": "k"}, True, False),
    ("POST", "/api/store/items/search", {}, False, False),
    ("POST", "/api/store/namespaces", {}, False, False),
    ("POST", "/api/assistants/count", {}, False, False),
    ("POST", "/api/assistants", {"graph_id": "expense_approval"}, True, False),
    ("PATCH", "/api/assistants/{assistant_id}", {"name": "x"}, True, False),
    ("DELETE", "/api/assistants/{assistant_id}", None, True, False),
    ("POST", "/api/assistants/{assistant_id}/versions", {}, False, False),
    ("POST", "/api/assistants/{assistant_id}/latest", {"version": 1}, True, False),
    ("GET", "/api/assistants/{assistant_id}/graph", None, False, False),
    ("GET", "/api/assistants/{assistant_id}/schemas", None, False, False),
    ("GET", "/api/assistants/{assistant_id}/subgraphs", None, False, False),
    ("GET", "/api/assistants/{assistant_id}/subgraphs/{namespace}", None, False, False),
    ("POST", "/api/threads/prune", {"thread_ids": ["x"]}, True, False),
    ("POST", T + "/copy", None, True, True),
    ("PATCH", T + "/state", {"metadata": {"team": "x"}}, True, True),
    ("GET", T + "/stream", None, False, True),
    ("GET", T + "/drift", None, False, True),
    ("DELETE", T + "/runs/{run}", None, True, True),
    ("POST", "/api/runs", STATELESS, True, False),
    ("POST", "/api/runs/wait", STATELESS, True, False),
    ("POST", "/api/runs/stream", STATELESS, True, False),
    ("POST", "/api/runs/batch", [STATELESS], True, False),
    ("POST", "/api/runs/cancel", {"status": "pending"}, True, False),
    ("POST", "/api/runs/crons", CRON, True, False),
    ("POST", T + "/runs/crons", CRON, True, True),
    ("POST", "/api/runs/crons/search", {}, False, False),
    ("POST", "/api/runs/crons/count", {}, False, False),
    ("PATCH", "/api/runs/crons/{cron_id}", {"enabled": False}, True, False),
    ("DELETE", "/api/runs/crons/{cron_id}", None, True, False),
    ("GET", T + "/divergence?checkpoint_id={checkpoint}", None, False, True),
    ("GET", T + "/runs/{run}/divergence", None, False, True),
]
# What the Agent Server serves outside its authenticated routes.
WITHOUT_A_KEY = [("GET", "/api/info"), ("GET", "/api/ok")]


def test_the_matrix_lists_every_api_route():
    schema = api.get_openapi_schema()
    routes = {
        (method.upper(), path.replace("{thread_id}", "{thread}").replace("{run_id}", "{run}"))
        for path, methods in schema["paths"].items()
        for method in methods
    }
    listed = {(m, p.replace("{checkpoint}", "{checkpoint_id}").split("?")[0]) for m, p, *_ in API}
    assert routes == listed | set(WITHOUT_A_KEY)


@pytest.mark.parametrize(("method", "path"), WITHOUT_A_KEY)
def test_info_routes_answer_without_a_key_and_say_nothing_of_a_tenant(world, method, path):
    answer = Client().generic(method, path)
    assert answer.status_code == 200
    assert world["thread"].name not in answer.content.decode()


def api_path(path: str, world: dict) -> str:
    return path.format(
        thread=world["thread"].name,
        run=world["run"].pk,
        checkpoint=world["checkpoint"],
        checkpoint_id=world["checkpoint"],
        assistant_id="expense_approval",
        namespace="validate",
        cron_id=world["cron"].cron_id,
    )


def fill(body, world):
    if isinstance(body, dict):
        return {k: fill(v, world) for k, v in body.items()}
    return body.format(checkpoint=world["checkpoint"]) if isinstance(body, str) else body


@pytest.mark.parametrize(("method", "path", "body", "acts", "names_thread"), API)
def test_api_access(world, method, path, body, acts, names_thread):
    url = api_path(path, world)
    body = fill(body, world)
    viewer_key = create_token(Tenant.default(), "viewer", role=Role.VIEWER)[1]
    foreign_key = create_token(world["globex"], "foreign")[1]
    before = everything(), stored()

    def ask(key: str | None):
        headers = {"HTTP_X_API_KEY": key} if key else {}
        return Client().generic(
            method,
            url,
            data=b"" if body is None else json.dumps(body),
            content_type="application/json",
            **headers,
        )

    anonymous = ask(None)
    assert anonymous.status_code == 401, anonymous.content
    viewer = ask(viewer_key)
    assert viewer.status_code == (403 if acts else 200), viewer.content[:300]
    assert (everything(), stored()) == before
    if names_thread:
        foreign = ask(foreign_key)
        assert foreign.status_code == 404, foreign.content[:300]
        assert (everything(), stored()) == before


def stored() -> list:
    from durable.models import StoreItem

    return list(StoreItem.objects.values_list("namespace", "key", "value"))


def test_security_headers(client):
    response = client.get(reverse("threads"))
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert "frame-ancestors 'none'" in policy
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    page = response.content.decode()
    # No inline script: every <script> loads a file.
    assert page.count("<script") == page.count("<script src=")


def test_cookies_are_secure_outside_debug():
    import subprocess
    import sys

    from tests.helpers.processes import ROOT

    code = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE, settings.DEBUG)"
    )
    env = {"DJANGO_SETTINGS_MODULE": "dashboard.settings", "DJANGO_DEBUG": "0",
           "DJANGO_SECRET_KEY": "from-the-environment", "PATH": "/usr/bin:/bin"}  # fmt: skip
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.stdout.split() == ["True", "True", "False"], out.stderr
    env.pop("DJANGO_SECRET_KEY")
    refused = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert refused.returncode != 0 and "DJANGO_SECRET_KEY must be set" in refused.stderr


@pytest.mark.parametrize(
    "name", sorted(n for n, (method, *_) in CONSOLE.items() if method == "POST")
)
def test_every_console_post_needs_the_csrf_token(world, operator, name):
    _, needs, _ = CONSOLE[name]
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(operator)
    before = everything()
    refused = strict.post(console_url(name, needs, world), {"reason": "x", "tenant": "globex"})
    assert refused.status_code == 403
    assert "CSRF" in refused.content.decode()
    assert everything() == before
