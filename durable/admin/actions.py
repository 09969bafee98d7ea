"""Retention's admin actions in two steps, as Django's delete confirmation: a page of what
each thread would lose (a dry run of ``durable.retention``), then, confirmed, the act,
audited with the admin user as actor."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.template.response import TemplateResponse

from durable import retention
from durable.models import RetentionPolicy

CONFIRM_TEMPLATE = "admin/durable/retention_confirm.html"


def confirm_retention(modeladmin, request, queryset, *, title: str, button: str, run):
    """An admin action in two steps, as Django's delete confirmation: a page listing what
    ``run(dry_run=True, ...)`` finds, thread by thread (nothing changes); then, on its
    POST with ``confirm=yes``, ``run(dry_run=False, actor=user, reason=...)``, a message,
    and back to the list. ``run`` returns a ``retention.Report``."""
    if request.POST.get("confirm") == "yes":
        reason = request.POST.get("reason", "").strip()[:1000]
        report = run(dry_run=False, actor=request.user, reason=reason)
        level = messages.ERROR if report.of(retention.ERROR) else messages.SUCCESS
        modeladmin.message_user(request, report.summary(), level)
        return None
    report = run(dry_run=True, actor=request.user, reason="")
    opts = modeladmin.model._meta
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": title,
        "subtitle": None,
        "button": button,
        "report": report,
        "outcomes": report.outcomes,
        "removed": report.removed,
        "selected": [str(pk) for pk in queryset.values_list("pk", flat=True)],
        "action": request.POST.get("action", ""),
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "opts": opts,
        "app_label": opts.app_label,
        "media": modeladmin.media,
    }
    request.current_app = modeladmin.admin_site.name
    return TemplateResponse(request, CONFIRM_TEMPLATE, context)


class AppliesRetention:
    """The **Apply retention now** action's work for a ModelAdmin (tenants, policies),
    allowed to those who may change retention policies (``permissions=["retention"]``)."""

    def apply_policies(self, request, queryset, policies: QuerySet[RetentionPolicy]):
        """Confirm, then apply, ``policies`` (``queryset`` is the admin's selection)."""
        chosen = list(policies.select_related("tenant").order_by("tenant__slug", "graph"))

        def run(*, dry_run, actor, reason):
            return retention.apply(policies=chosen, dry_run=dry_run, actor=actor, reason=reason)

        return confirm_retention(
            self, request, queryset, title="Apply retention now?", button="Apply", run=run
        )

    def has_retention_permission(self, request):
        return request.user.has_perm("durable.change_retentionpolicy")
