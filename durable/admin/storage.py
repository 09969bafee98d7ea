"""The admin of the checkpointer's tables (checkpoints, blobs, writes) and the store's
items: read-only, as they change only through ``DjangoSaver`` and ``DjangoStore``; a
binary column shows its size, never its bytes."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.template.defaultfilters import pluralize
from django.utils import timezone

from durable.admin.scoping import ByCheckpointThread, ByNamespace, ReadOnly
from durable.models import Checkpoint, CheckpointBlob, CheckpointWrite, StoreItem, Thread


class NamespaceFilter(admin.SimpleListFilter):
    """Root graph or subgraph rows, without reading the distinct namespaces of a large
    table."""

    title = "namespace"
    parameter_name = "ns"

    def lookups(self, request, model_admin):
        return [("root", "root graph"), ("sub", "subgraphs")]

    def queryset(self, request, queryset):
        if self.value() == "root":
            return queryset.filter(checkpoint_ns="")
        if self.value() == "sub":
            return queryset.exclude(checkpoint_ns="")
        return queryset


def _size(data) -> str:
    return "—" if data is None else f"{len(data)} byte{pluralize(len(data))}"


class _NamedThreadsChangeList(ChangeList):
    """A page of checkpointer rows, each with ``_thread_name`` set (``None`` when its
    thread is gone): the names of the page's threads in one query, not one a row."""

    def get_results(self, request):
        super().get_results(request)
        rows = list(self.result_list)  # evaluates the page once; the template reuses it
        uuids = {row.thread_id for row in rows}
        names = dict(Thread.objects.filter(thread_id__in=uuids).values_list("thread_id", "name"))
        for row in rows:
            row._thread_name = names.get(row.thread_id)


class ThreadName:
    """A ``thread_name`` column beside the checkpointer's ``thread_id`` (LangGraph's id, a
    UUID for a thread given a name): ``Thread.name``, the id the tenant knows the thread
    by. The tables hold the UUID, not a foreign key, so names are looked up through
    ``Thread.thread_id``: once a page on the list, once on a row's own page; "—" for a
    row whose thread is gone."""

    def get_changelist(self, request, **kwargs):
        return _NamedThreadsChangeList

    @admin.display(description="thread name")
    def thread_name(self, obj):
        if not hasattr(obj, "_thread_name"):
            found = Thread.objects.filter(thread_id=obj.thread_id).values_list("name", flat=True)
            obj._thread_name = found.first()
        return obj._thread_name or "—"


@admin.register(Checkpoint)
class CheckpointAdmin(ThreadName, ByCheckpointThread, ReadOnly, admin.ModelAdmin):
    list_display = (
        "thread_id",
        "thread_name",
        "checkpoint_ns",
        "checkpoint_id",
        "parent_checkpoint_id",
        "step",
    )
    list_filter = (NamespaceFilter,)
    search_fields = ("=thread_id", "=checkpoint_id")
    fields = (
        "thread_id",
        "thread_name",
        "checkpoint_ns",
        "checkpoint_id",
        "parent_checkpoint_id",
        "type",
        "payload",
        "channel_versions",
        "metadata",
    )
    readonly_fields = fields
    show_full_result_count = False

    @admin.display(description="step")
    def step(self, obj):
        return (obj.metadata or {}).get("step")

    @admin.display(description="checkpoint")
    def payload(self, obj):
        return _size(obj.checkpoint)


@admin.register(CheckpointBlob)
class CheckpointBlobAdmin(ThreadName, ByCheckpointThread, ReadOnly, admin.ModelAdmin):
    list_display = (
        "thread_id",
        "thread_name",
        "checkpoint_ns",
        "channel",
        "version",
        "type",
        "size",
    )
    list_filter = (NamespaceFilter,)
    search_fields = ("=thread_id", "=channel")
    fields = ("thread_id", "thread_name", "checkpoint_ns", "channel", "version", "type", "size")
    readonly_fields = fields
    show_full_result_count = False

    @admin.display(description="blob")
    def size(self, obj):
        return _size(obj.blob)


class SpecialWriteFilter(admin.SimpleListFilter):
    title = "channel"
    parameter_name = "kind"

    def lookups(self, request, model_admin):
        return [("special", "special (__interrupt__, __error__, ...)"), ("regular", "regular")]

    def queryset(self, request, queryset):
        if self.value() == "special":
            return queryset.filter(idx__lt=0)
        if self.value() == "regular":
            return queryset.filter(idx__gte=0)
        return queryset


@admin.register(CheckpointWrite)
class CheckpointWriteAdmin(ThreadName, ByCheckpointThread, ReadOnly, admin.ModelAdmin):
    list_display = (
        "thread_id",
        "thread_name",
        "checkpoint_ns",
        "checkpoint_id",
        "task_id",
        "idx",
        "channel",
    )
    list_filter = (NamespaceFilter, SpecialWriteFilter)
    search_fields = ("=thread_id", "=checkpoint_id", "=channel")
    fields = (
        "thread_id",
        "thread_name",
        "checkpoint_ns",
        "checkpoint_id",
        "task_id",
        "task_path",
        "idx",
        "channel",
        "type",
        "size",
    )
    readonly_fields = fields
    show_full_result_count = False

    @admin.display(description="blob")
    def size(self, obj):
        return _size(obj.blob)


class ExpiryFilter(admin.SimpleListFilter):
    title = "time to live"
    parameter_name = "ttl"

    def lookups(self, request, model_admin):
        return [("none", "never expires"), ("set", "expires"), ("expired", "expired")]

    def queryset(self, request, queryset):
        if self.value() == "none":
            return queryset.filter(expires_at=None)
        if self.value() == "set":
            return queryset.exclude(expires_at=None)
        if self.value() == "expired":
            return queryset.filter(expires_at__lte=timezone.now())
        return queryset


@admin.register(StoreItem)
class StoreItemAdmin(ByNamespace, ReadOnly, admin.ModelAdmin):
    list_display = ("namespace", "key", "updated_at", "expires_at")
    list_filter = (ExpiryFilter,)
    # "^" is a prefix match: a namespace and the ones under it.
    search_fields = ("^namespace", "=key")
    fields = (
        "namespace",
        "key",
        "value",
        "type",
        "size",
        "created_at",
        "updated_at",
        "expires_at",
        "ttl_minutes",
    )
    readonly_fields = fields
    show_full_result_count = False

    @admin.display(description="encrypted value")
    def size(self, obj):
        return _size(obj.blob)
