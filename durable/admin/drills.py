"""Fault drill reports in the admin, read-only, and the **Run fault drills** button on
their list: a POST (CSRF-protected) sends the drills to a worker
(``durable.drills.tasks``), since they take tens of seconds; the report appears in the
list, and on the console's Operations page, once they are done.

Drills act on the whole deployment (one of them SIGTERMs a worker), so only a superuser,
or a staff user given "Can add drill report", may run them; any staff user reads the
reports."""

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path, reverse
from django.utils.html import format_html_join

from durable.admin.scoping import ReadOnly
from durable.drills import tasks
from durable.engine import queue
from durable.models import DrillReport


@admin.register(DrillReport)
class DrillReportAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ["started_at", "verdict", "outcomes", "workers_counted", "requested_by"]
    fields = ["started_at", "finished_at", "requested_by", "workers_counted", "passed", "outcomes"]
    readonly_fields = fields
    change_list_template = "admin/durable/drillreport/change_list.html"

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_staff

    @admin.display(description="verdict")
    def verdict(self, report):
        return report.verdict

    @admin.display(description="workers")
    def workers_counted(self, report):
        return "not counted" if report.workers is None else report.workers

    @admin.display(description="drills")
    def outcomes(self, report):
        return format_html_join(
            ", ",
            "{} {}{}",
            (
                (r["name"], r["outcome"], f" ({r['seconds']:.2f} s)" if r["seconds"] else "")
                for r in report.results
            ),
        )

    def may_run(self, request) -> bool:
        return request.user.has_perm("durable.add_drillreport")

    def get_urls(self):
        run = path("run/", self.admin_site.admin_view(self.run_view), name="durable_drill_run")
        return [run, *super().get_urls()]

    def changelist_view(self, request, extra_context=None):
        extra = {"may_run_drills": self.may_run(request), **(extra_context or {})}
        return super().changelist_view(request, extra)

    def run_view(self, request):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.may_run(request):
            raise PermissionDenied
        tasks.run_drills_task.delay(requested_by=request.user.get_username())
        if queue.can_ping_workers():
            drain = (
                "If two or more workers answer Celery's ping, one is drained by SIGTERM: "
                "your process manager should start it again."
            )
        else:
            drain = f"The drain drill is skipped: {DrillReport.CANNOT_PING}."
        self.message_user(
            request,
            "The fault drills are running on a worker; their report appears here when "
            f"they are done (a minute or so). {drain}",
            messages.SUCCESS,
        )
        return HttpResponseRedirect(reverse("admin:durable_drillreport_changelist"))
