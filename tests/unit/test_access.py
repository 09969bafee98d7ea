"""The console's views see threads, runs and the store only through ``dashboard.access``,
the one place where tenant scoping lands: a run the request may not see is a 404, as an
unknown one is."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.urls import reverse

import dashboard.views

VIEWS = sorted(Path(dashboard.views.__file__).parent.glob("*.py"))


def unscoped_reads(source: str) -> list[str]:
    """Where ``source`` reads a model's manager (``Model.objects``) or builds a store
    itself, instead of asking ``dashboard.access``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "objects":
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("DjangoStore"):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("module", VIEWS, ids=[p.stem for p in VIEWS])
def test_views_get_their_querysets_and_store_from_access(module):
    assert unscoped_reads(module.read_text()) == []


def test_the_check_finds_unscoped_reads():
    source = "def view(request, pk):\n    store = DjangoStore()\n    Run.objects.get(pk=pk)\n"
    assert unscoped_reads(source) == [
        "line 2: DjangoStore()",
        "line 3: Run.objects",
    ]


# transaction=True: the events view reads on a borrowed connection, which it closes.
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("pk", [999_999, 10**20])
def test_the_events_of_a_run_the_request_cannot_see_are_a_404(client, pk):
    assert client.get(reverse("run-events", args=[pk])).status_code == 404
    assert client.get(reverse("run", args=[pk])).status_code == 404
