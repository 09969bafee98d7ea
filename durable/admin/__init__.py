"""The Django admin: a page for every model, and retention's actions.

Checkpoints, blobs, writes, store items, runs and their events are read-only here: they
change through ``DjangoSaver``, ``DjangoStore`` and ``durable.engine``. Audit events can be
read by staff with the view permission and never changed or deleted.

Threads are deleted and pruned only through ``durable.retention`` (so through the saver:
no checkpoint, blob or write is left behind): the actions **Delete threads**, **Prune to
latest** (threads) and **Apply retention now** (retention policies, tenants) first show a
confirmation page with what each thread would lose (checkpoints, blobs, writes), as
Django's delete confirmation does; its POST with ``confirm=yes`` acts, and every thread
pruned or deleted writes an ``AuditEvent`` with the admin user as actor. Creating or
changing a retention policy writes ``retention_change``; creating and revoking API tokens
(``durable.tenancy``) write ``token_create`` and ``token_revoke``, and a new token is
shown once, in the page's message.

**Tenants.** A superuser manages every tenant. Any other staff user sees, in every page
of this admin, only the rows of the tenants where their membership is ``admin`` (or every
tenant, read-only by Django's view permissions, with ``durable.audit_all_tenants``), and
can pick only those tenants in a form: ``TenantScoped.get_queryset`` is the one place.
"""

from __future__ import annotations

from datetime import timedelta

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db import transaction
from django.db.models import Q, QuerySet
from django.template.response import TemplateResponse
from django.utils.html import format_html

from durable import audit, retention, tenancy
from durable.models import (
    ApiToken,
    AuditEvent,
    Checkpoint,
    CheckpointBlob,
    CheckpointWrite,
    Membership,
    RetentionPolicy,
    Role,
    Run,
    RunEvent,
    StoreItem,
    Tenant,
    Thread,
)

CONFIRM_TEMPLATE = "admin/durable/retention_confirm.html"


def managed_tenants(request) -> QuerySet[Tenant]:
    """The tenants ``request.user`` manages here: all for a superuser, else those of their
    ``admin`` memberships. Forms offer only these."""
    if request.user.is_superuser:
        return Tenant.objects.all()
    return Tenant.objects.filter(memberships__user=request.user, memberships__role=Role.ADMIN)


def visible_tenants(request) -> QuerySet[Tenant]:
    """The tenants whose rows ``request.user`` sees here: the managed ones, or all for a
    staff auditor (who reads, by Django's view permissions)."""
    if tenancy.is_auditor(request.user):
        return Tenant.objects.all()
    return managed_tenants(request)


class TenantScoped:
    """Rows of the managed tenants only. ``tenant_path`` is the lookup from the model to
    its tenant; models keyed by a checkpointer thread id or a store namespace override
    ``scope``."""

    tenant_path = "tenant"

    def scope(self, queryset: QuerySet, tenants: QuerySet[Tenant]) -> QuerySet:
        return queryset.filter(**{f"{self.tenant_path}__in": tenants})

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        return self.scope(queryset, visible_tenants(request))

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.related_model is Tenant and not request.user.is_superuser:
            kwargs["queryset"] = managed_tenants(request)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class ByCheckpointThread(TenantScoped):
    """Checkpoint tables hold the checkpointer's thread id, not a foreign key."""

    def scope(self, queryset, tenants):
        keys = Thread.objects.filter(tenant__in=tenants).values("thread_id")
        return queryset.filter(thread_id__in=keys)


class ByNamespace(TenantScoped):
    """Store items of a tenant live under its slug (``durable.persistence.store.scoped``)."""

    def scope(self, queryset, tenants):
        under = Q(pk__in=[])
        for slug in tenants.values_list("slug", flat=True):
            under |= Q(namespace=slug) | Q(namespace__startswith=f"{slug}.")
        return queryset.filter(under)


class ReadOnly:
    """Rows that change only through the saver, the store, ``durable.engine.operations`` and the
    workers."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


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
    return "—" if data is None else f"{len(data)} bytes"


# -- retention's confirmation page ------------------------------------------------------------


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


# -- tenants, members, tokens, policies, audit -----------------------------------------------


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ("user",)


@admin.register(Tenant)
class TenantAdmin(TenantScoped, admin.ModelAdmin):
    tenant_path = "pk"
    list_display = ("slug", "name", "created_at")
    list_filter = ("created_at",)
    search_fields = ("slug", "name")
    date_hierarchy = "created_at"
    inlines = [MembershipInline]
    actions = ["apply_retention_now"]

    def get_readonly_fields(self, request, obj=None):
        # The slug is the tenant's id in tokens and store namespaces: it never changes.
        return ("slug", "created_at") if obj is not None else ("created_at",)

    @admin.action(
        description="Apply retention now (the tenants' enabled policies)",
        permissions=["retention"],
    )
    def apply_retention_now(self, request, queryset):
        policies = (
            RetentionPolicy.objects.filter(tenant__in=queryset, enabled=True)
            .select_related("tenant")
            .order_by("tenant__slug", "graph")
        )

        def run(*, dry_run, actor, reason):
            return retention.apply(
                policies=list(policies), dry_run=dry_run, actor=actor, reason=reason
            )

        return confirm_retention(
            self, request, queryset, title="Apply retention now?", button="Apply", run=run
        )

    def has_retention_permission(self, request):
        return request.user.has_perm("durable.change_retentionpolicy")


@admin.register(Membership)
class MembershipAdmin(TenantScoped, admin.ModelAdmin):
    list_display = ("user", "tenant", "role")
    list_filter = ("role", "tenant")
    search_fields = ("user__username", "tenant__slug", "tenant__name")
    autocomplete_fields = ("user", "tenant")
    list_select_related = ("user", "tenant")


class RevokedFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("live", "live"), ("revoked", "revoked")]

    def queryset(self, request, queryset):
        if self.value() == "live":
            return queryset.filter(revoked_at=None)
        if self.value() == "revoked":
            return queryset.exclude(revoked_at=None)
        return queryset


@admin.register(ApiToken)
class ApiTokenAdmin(TenantScoped, admin.ModelAdmin):
    """Tokens are made by ``durable.tenancy.create_token`` (only the digest is stored;
    the token is shown once, in a message) and revoked by the **Revoke** action; they
    are never edited or deleted, so the record of who made them stays."""

    list_display = (
        "name",
        "tenant",
        "role",
        "prefix",
        "created_by",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    list_filter = (RevokedFilter, "role", "tenant")
    search_fields = ("name", "prefix", "tenant__slug", "created_by")
    list_select_related = ("tenant",)
    actions = ["revoke_tokens"]

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("tenant", "name", "role")
        return (
            "tenant",
            "name",
            "role",
            "prefix",
            "created_by",
            "created_at",
            "last_used_at",
            "revoked_at",
        )

    def get_readonly_fields(self, request, obj=None):
        return self.get_fields(request, obj) if obj is not None else ()

    def has_delete_permission(self, request, obj=None):
        return False

    def formfield_for_choice_field(self, db_field, request, **kwargs):
        if db_field.name == "role":  # a token reads or acts; it manages nothing
            kwargs["choices"] = [(r.value, r.label) for r in (Role.VIEWER, Role.OPERATOR)]
        return super().formfield_for_choice_field(db_field, request, **kwargs)

    def save_model(self, request, obj, form, change):
        if change:  # nothing is editable; the form saves nothing
            return
        row, token = tenancy.create_token(
            obj.tenant, obj.name, role=obj.role, created_by=request.user.get_username()
        )
        obj.pk = row.pk
        for name in ("digest", "prefix", "created_by", "created_at"):
            setattr(obj, name, getattr(row, name))
        obj._state.adding = False
        audit.record(
            AuditEvent.Action.TOKEN_CREATE,
            actor=request.user,
            tenant=row.tenant,
            detail={"token": row.name, "prefix": row.prefix, "role": row.role, "id": row.pk},
        )
        messages.warning(
            request,
            format_html(
                "The new token of {} is <code>{}</code>. Copy it now: it is not stored and "
                "cannot be shown again.",
                row.tenant,
                token,
            ),
        )

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke_tokens(self, request, queryset):
        revoked = 0
        with transaction.atomic():
            for row in queryset.select_related("tenant"):
                if tenancy.revoke(row):
                    revoked += 1
                    audit.record(
                        AuditEvent.Action.TOKEN_REVOKE,
                        actor=request.user,
                        tenant=row.tenant,
                        detail={"token": row.name, "prefix": row.prefix, "id": row.pk},
                    )
        self.message_user(request, f"{revoked} token{'s' * (revoked != 1)} revoked.")


def _policy_fields(policy: RetentionPolicy) -> dict:
    return {
        "tenant": policy.tenant.slug,
        "graph": policy.graph,
        "max_age": _duration(policy.max_age),
        "strategy": policy.strategy,
        "keep_last": policy.keep_last,
        "enabled": policy.enabled,
    }


def _duration(value: timedelta | None) -> str | None:
    return None if value is None else str(value)


@admin.register(RetentionPolicy)
class RetentionPolicyAdmin(TenantScoped, admin.ModelAdmin):
    list_display = ("tenant", "graph_or_all", "max_age", "strategy", "keep_last", "enabled")
    list_filter = ("enabled", "strategy", "tenant")
    search_fields = ("tenant__slug", "graph")
    list_select_related = ("tenant",)
    readonly_fields = ("updated_at",)
    actions = ["apply_retention_now"]

    @admin.display(description="graph", ordering="graph")
    def graph_or_all(self, obj):
        return obj.graph or "(every graph)"

    def save_model(self, request, obj, form, change):
        before = None
        if change:
            before = _policy_fields(RetentionPolicy.objects.select_related("tenant").get(pk=obj.pk))
        super().save_model(request, obj, form, change)
        after = _policy_fields(obj)
        detail = {"change": "changed" if change else "created", "policy": obj.pk, **after}
        if before is not None:
            detail["changed"] = {k: [before[k], after[k]] for k in after if before[k] != after[k]}
        audit.record(
            AuditEvent.Action.RETENTION_CHANGE, actor=request.user, tenant=obj.tenant, detail=detail
        )

    def delete_model(self, request, obj):
        self._record_deleted(request, obj)
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            for obj in queryset.select_related("tenant"):
                self._record_deleted(request, obj)
            super().delete_queryset(request, queryset)

    def _record_deleted(self, request, obj):
        audit.record(
            AuditEvent.Action.RETENTION_CHANGE,
            actor=request.user,
            tenant=obj.tenant,
            detail={"change": "deleted", "policy": obj.pk, **_policy_fields(obj)},
        )

    @admin.action(
        description="Apply retention now (the selected policies)", permissions=["retention"]
    )
    def apply_retention_now(self, request, queryset):
        policies = list(queryset.select_related("tenant").order_by("tenant__slug", "graph"))

        def run(*, dry_run, actor, reason):
            return retention.apply(policies=policies, dry_run=dry_run, actor=actor, reason=reason)

        return confirm_retention(
            self, request, queryset, title="Apply retention now?", button="Apply", run=run
        )

    def has_retention_permission(self, request):
        return request.user.has_perm("durable.change_retentionpolicy")


@admin.register(AuditEvent)
class AuditEventAdmin(TenantScoped, ReadOnly, admin.ModelAdmin):
    """Append-only: staff with the view permission read it; nobody adds, changes or
    deletes an event here (the model and a database trigger refuse to anyway)."""

    list_display = (
        "created_at",
        "tenant",
        "actor",
        "action",
        "thread_name",
        "run_id",
        "checkpoint_before",
        "checkpoint_after",
        "reason",
    )
    list_filter = ("action", "tenant", "created_at")
    search_fields = ("actor", "thread_name", "=thread_id", "reason")
    date_hierarchy = "created_at"
    list_select_related = ("tenant",)
    readonly_fields = [f.name for f in AuditEvent._meta.fields]
    show_full_result_count = False

    def get_actions(self, request):
        return {}


# -- threads, runs, events --------------------------------------------------------------------


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
    tenant_path = "thread__tenant"
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
    readonly_fields = [f.name for f in Run._meta.fields]
    list_select_related = ("thread",)


@admin.register(RunEvent)
class RunEventAdmin(TenantScoped, ReadOnly, admin.ModelAdmin):
    tenant_path = "run__thread__tenant"
    list_display = ("run", "seq", "event", "ns", "created_at")
    list_filter = ("event",)
    # Events of one run: search for its id (a run has thousands: one page at a time).
    search_fields = ("=run__id",)
    readonly_fields = [f.name for f in RunEvent._meta.fields]
    ordering = ("run", "seq")
    show_full_result_count = False


# -- the checkpointer's and the store's tables -------------------------------------------------


@admin.register(Checkpoint)
class CheckpointAdmin(ByCheckpointThread, ReadOnly, admin.ModelAdmin):
    list_display = ("thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "step")
    list_filter = (NamespaceFilter,)
    search_fields = ("=thread_id", "=checkpoint_id")
    fields = (
        "thread_id",
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
class CheckpointBlobAdmin(ByCheckpointThread, ReadOnly, admin.ModelAdmin):
    list_display = ("thread_id", "checkpoint_ns", "channel", "version", "type", "size")
    list_filter = (NamespaceFilter,)
    search_fields = ("=thread_id", "=channel")
    fields = ("thread_id", "checkpoint_ns", "channel", "version", "type", "size")
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
class CheckpointWriteAdmin(ByCheckpointThread, ReadOnly, admin.ModelAdmin):
    list_display = ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", "channel")
    list_filter = (NamespaceFilter, SpecialWriteFilter)
    search_fields = ("=thread_id", "=checkpoint_id", "=channel")
    fields = (
        "thread_id",
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
        from django.utils import timezone

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
