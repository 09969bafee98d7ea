"""The admin of threads, runs and run events. Runs and events are read-only; threads are
deleted and pruned only by retention's actions (through the saver), never by Django's
own delete, which would leave the checkpoint rows behind. The JSON a run and an event
keep is shown masked (``durable.redaction``), as the console shows it."""

from __future__ import annotations

import json

from django.contrib import admin
from django.db.models import QuerySet

from durable import retention
from durable.admin.actions import confirm_retention
from durable.admin.scoping import ReadOnly, TenantScoped
from durable.models import GraphVersion, Run, RunEvent, Thread
from durable.redaction import redact

# The JSON columns of runs and events that can hold state values.
MASKED = ("input", "command", "metadata", "config", "context", "interrupts", "data")


def _masked(name: str):
    """A read-only admin field showing column ``name`` masked, as ``masked_<name>``."""

    @admin.display(description=name)
    def show(self, obj):
        return json.dumps(redact(getattr(obj, name)), ensure_ascii=False, default=str)

    show.__name__ = f"masked_{name}"
    return show


def _shown(model) -> list[str]:
    return [f"masked_{f.name}" if f.name in MASKED else f.name for f in model._meta.fields]


class RunInline(ReadOnly, admin.TabularInline):
    model = Run
    fields = ("kind", "status", "requested_by", "created_at", "ended_at", "error_type")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Thread)
class ThreadAdmin(TenantScoped, admin.ModelAdmin):
    """Threads are deleted and pruned by the actions below, through ``durable.retention``
    (and so the saver), never by Django's own delete, which would leave the checkpoint
    rows behind."""

    list_display = ("name", "tenant", "graph", "status", "updated_at", "thread_id")
    list_filter = ("status", "tenant", "graph")
    search_fields = ("name", "=thread_id")
    readonly_fields = (
        "tenant",
        "thread_id",
        "name",
        "graph",
        "status",
        "graph_version",
        "metadata",
        "created_at",
        "updated_at",
    )
    list_select_related = ("tenant",)
    inlines = [RunInline]
    actions = ["delete_threads", "prune_to_latest"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_prune_permission(self, request):
        return request.user.has_perm("durable.delete_thread")

    @admin.action(
        description="Delete threads (with their runs, checkpoints, blobs and writes)",
        permissions=["prune"],
    )
    def delete_threads(self, request, queryset: QuerySet[Thread]):
        def run(*, dry_run, actor, reason):
            return retention.delete_threads(queryset, dry_run=dry_run, actor=actor, reason=reason)

        return confirm_retention(
            self, request, queryset, title="Delete these threads?", button="Delete", run=run
        )

    @admin.action(description="Prune to latest checkpoint", permissions=["prune"])
    def prune_to_latest(self, request, queryset: QuerySet[Thread]):
        def run(*, dry_run, actor, reason):
            return retention.prune_threads(
                queryset, keep=1, dry_run=dry_run, actor=actor, reason=reason
            )

        return confirm_retention(
            self, request, queryset, title="Prune these threads?", button="Prune", run=run
        )


@admin.register(Run)
class RunAdmin(TenantScoped, ReadOnly, admin.ModelAdmin):
    list_display = (
        "pk",
        "thread",
        "graph",
        "kind",
        "status",
        "requested_by",
        "attempt",
        "worker",
        "created_at",
        "ended_at",
    )
    list_filter = ("status", "kind", "graph", "durability", "thread__tenant")
    search_fields = ("=id", "thread__name", "=thread__thread_id", "requested_by", "worker")
    fields = readonly_fields = _shown(Run)
    list_select_related = ("thread",)
    masked_input, masked_command, masked_metadata = map(_masked, MASKED[:3])
    masked_config, masked_context, masked_interrupts = map(_masked, MASKED[3:6])


@admin.register(RunEvent)
class RunEventAdmin(TenantScoped, ReadOnly, admin.ModelAdmin):
    tenant_path = "run__thread__tenant"
    list_display = ("run", "seq", "event", "ns", "created_at")
    list_filter = ("event",)
    # Events of one run: search for its id (a run has thousands: one page at a time).
    search_fields = ("=run__id",)
    fields = readonly_fields = _shown(RunEvent)
    masked_data = _masked("data")
    ordering = ("run", "seq")
    show_full_result_count = False


@admin.register(GraphVersion)
class GraphVersionAdmin(ReadOnly, admin.ModelAdmin):
    """The graph versions runs ran (``durable.engine.versions``): written by the workers
    and the console, read-only here; no tenant's (every tenant runs the same code)."""

    list_display = ("graph", "name", "number", "first_seen", "digest")
    list_filter = ("graph",)
    search_fields = ("graph", "name", "=digest")
