"""Every form of the console, by what it is for: ``resume`` (answering interrupts),
``actions`` (start, replay, close), ``fork``, ``crons`` (a new cron), ``queries`` (the GET
parameters of a page), ``filters`` (the list pages' filters); ``fields`` holds what
they share, ``schema_form`` the fields built from a JSON Schema (typed answers, start
inputs)."""

from dashboard.forms.actions import (
    CloseForm,
    ReplayForm,
    StartRunForm,
    refusal,
    start_forms,
)
from dashboard.forms.crons import CronForm
from dashboard.forms.filters import AuditFilter, BadFilter, ThreadFilter, parse_filter, store_page
from dashboard.forms.fork import ForkForm
from dashboard.forms.queries import (
    DiffForm,
    GraphForm,
    JsonForm,
    NamespaceForm,
    PageForm,
    PictureForm,
    RevealForm,
    TreeForm,
    form_errors,
)
from dashboard.forms.resume import ResumeForm

__all__ = [
    "CronForm",
    "ResumeForm",
    "StartRunForm",
    "ForkForm",
    "ReplayForm",
    "CloseForm",
    "start_forms",
    "refusal",
    "PageForm",
    "TreeForm",
    "NamespaceForm",
    "DiffForm",
    "JsonForm",
    "RevealForm",
    "PictureForm",
    "GraphForm",
    "form_errors",
    "ThreadFilter",
    "AuditFilter",
    "BadFilter",
    "parse_filter",
    "store_page",
]
