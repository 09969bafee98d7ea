"""Read-mostly admin for the console's own tables.

Threads are not deleted here: deleting one must go through the saver
(``DjangoSaver.delete_thread``) so no checkpoint, blob or write is left behind; the
admin actions that do that arrive with retention (issue 5).
"""

from django.contrib import admin

from durable.models import Run, Thread


class RunInline(admin.TabularInline):
    model = Run
    fields = ("kind", "status", "created_at", "ended_at", "error_type")
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
class RunAdmin(admin.ModelAdmin):
    list_display = ("pk", "thread", "graph", "kind", "status", "created_at", "ended_at")
    list_filter = ("status", "kind", "graph")
    search_fields = ("thread__thread_id",)
    readonly_fields = [f.name for f in Run._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
