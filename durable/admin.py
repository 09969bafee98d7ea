"""Read-mostly admin for the console's own tables.

Threads are not deleted here: deleting one must go through the saver
(``DjangoSaver.delete_thread``) so no checkpoint, blob or write is left behind; the
admin actions that do that arrive with retention (issue 5).
"""

from django.contrib import admin

from durable.models import Run, RunEvent, Thread


class ReadOnly:
    """Runs and their events change only through ``durable.runs`` and the workers."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class RunInline(ReadOnly, admin.TabularInline):
    model = Run
    fields = ("kind", "status", "requested_by", "created_at", "ended_at", "error_type")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Thread)
class ThreadAdmin(admin.ModelAdmin):
    list_display = ("thread_id", "graph", "status", "updated_at")
    list_filter = ("status", "graph")
    search_fields = ("thread_id",)
    readonly_fields = ("thread_id", "graph", "status", "created_at", "updated_at")
    inlines = [RunInline]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Run)
class RunAdmin(ReadOnly, admin.ModelAdmin):
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
    list_filter = ("status", "kind", "graph", "durability")
    search_fields = ("thread__thread_id", "requested_by", "worker")
    readonly_fields = [f.name for f in Run._meta.fields]
    list_select_related = ("thread",)


@admin.register(RunEvent)
class RunEventAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("run", "seq", "event", "ns", "created_at")
    list_filter = ("event",)
    # Events of one run: search for its id (a run has thousands: one page at a time).
    search_fields = ("=run__id",)
    readonly_fields = [f.name for f in RunEvent._meta.fields]
    ordering = ("run", "seq")
