"""A thread's checkpoint history as a tree of lanes, a page at a time.

The tree reads by checkpoint id (``durable.history``), so a page costs the same however
long the history is; ``dashboard.present.tree`` draws it.
"""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard import access
from dashboard.forms import TreeForm, form_errors
from dashboard.http import render_page
from dashboard.present.tree import tree_context


@require_GET
def thread_history(request, pk: int):
    """``/threads/<pk>/history/?ns=&before=&after=``: a page of the checkpoint tree. An
    htmx request aimed at ``tree`` gets only the tree partial; bad parameters are a 400
    listing them."""
    thread = access.thread_or_404(request, pk)
    form = TreeForm(request.GET)
    if not form.is_valid():
        context = {"thread": thread, "tree": None, "tree_errors": form_errors(form)}
        return render(request, "dashboard/history.html", context, status=400)
    tree = tree_context(thread, **form.cleaned_data, actions=access.may_act_here(request))
    context = {"thread": thread, "tree": tree}
    return render_page(request, "dashboard/history.html", context, target="tree", part="tree")
