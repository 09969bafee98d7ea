"""The console's rooms: views declare no form and import no other view, and a refusal (403)
is a console page that says why."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

import dashboard.views
from durable.models import Role
from tests.helpers.users import member

VIEWS = sorted(Path(dashboard.views.__file__).parent.glob("*.py"))


def _imports(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
            found.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return found


@pytest.mark.parametrize("module", VIEWS, ids=[p.stem for p in VIEWS])
def test_a_view_module_imports_no_other_view(module):
    imported = _imports(ast.parse(module.read_text()))
    assert [name for name in imported if name.startswith("dashboard.views")] == []


@pytest.mark.parametrize("module", VIEWS, ids=[p.stem for p in VIEWS])
def test_a_view_module_declares_no_form(module):
    """Forms and filters live in ``dashboard.forms``, where the next form's author looks."""
    classes = [n for n in ast.walk(ast.parse(module.read_text())) if isinstance(n, ast.ClassDef)]
    bases = {c.name: [ast.unparse(b) for b in c.bases] for c in classes}
    assert {
        name: found
        for name, found in bases.items()
        if any(b.endswith(("Form", "FilterSet")) for b in found)
    } == {}


def _logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _console_page(html: str) -> bool:
    """Whether ``html`` is inside the console's layout: its header and main navigation."""
    return 'class="brand"' in html and 'aria-label="Main"' in html


@pytest.mark.django_db
def test_a_viewer_refused_an_action_sees_why_in_the_console():
    viewer = _logged_in(member("vera", role=Role.VIEWER))
    response = viewer.post(reverse("start-run"), {"graph": "expense_approval", "input": "{}"})
    assert response.status_code == 403
    html = response.content.decode()
    assert "Viewers cannot change threads or runs." in html
    assert "Your role in" in html and "<strong>viewer</strong>" in html
    assert _console_page(html)


@pytest.mark.django_db
def test_a_user_of_no_tenant_is_told_so_on_the_store_page():
    nobody = _logged_in(get_user_model().objects.create_user("nobody", password="x-1-y-2"))
    response = nobody.get(reverse("store"))
    assert response.status_code == 403
    html = response.content.decode()
    assert "You are not a member of any tenant." in html
    assert _console_page(html)
